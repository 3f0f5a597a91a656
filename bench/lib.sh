# What the bench scripts share (sourced after they cd to the repository's root).

# The median of the numbers read one per line (the lower middle one of an even count).
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Training steps per timed run of a model in the single-process and AR-SGD benchmarks (a few seconds each).
steps_for() { case $1 in lenet5) echo 400 ;; mlp) echo 200 ;; *) echo 200 ;; esac; }

# A held-out published point (the *_calibration.sh scripts): LABELS (already laid out), then simulate's prediction in
# SIM_JSON against the PUBLISHED figure, the error, and where the figure lies against the range of the clusters that
# fit the calibration's points. One line, appended to TABLE and printed.
held_out_row() {  # TABLE SIM_JSON PUBLISHED LABELS
  python3 - "$2" "$3" "$4" <<'PY' | tee -a "$1"
import json, sys
prediction = json.load(open(sys.argv[1]))["predictions"][0]
published = float(sys.argv[2])
predicted = prediction["samples_per_second"]
low, high = prediction["samples_per_second_range"]
where = "inside" if low <= published <= high else "below" if published < low else "above"
print(f"{sys.argv[3]} {predicted:>9.1f} {published:>9.1f} {100 * (predicted / published - 1):>+7.1f}%  "
      f"{low:>6.0f}-{high:<6.0f} {where}")
PY
}

# The count of TABLE's rows within 10% and inside their range, after WHAT ("held out (32 GPUs)").
held_out_summary() {  # TABLE WHAT
  awk -v what="$2" '{ n++; error = $(NF - 2) + 0; if (error <= 10 && error >= -10) within++; if ($NF == "inside") inside++ }
       END { printf "%s: %d of %d within 10%%; the published figure inside the range at %d\n", what, within, n, inside }' \
    "$1"
}
