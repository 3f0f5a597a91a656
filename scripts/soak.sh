#!/usr/bin/env bash
# make soak: long runs of the asynchronous algorithms under random message delays, watched for what short tests miss:
# memory that grows, a run that stops making progress, messages that get lost. AD-PSGD, ALADDIN and SSP (s=3), 4
# workers each, one after another, SOAK_MINUTES in all (default 20). As root the ranks talk over an emulated cluster
# whose links delay every packet by 1 ms +- 1 ms (the delay line; packets stay in order); otherwise over loopback,
# with each parameter-server reply delayed by DISTSGD_SERVER_DELAY_MS (AD-PSGD then runs undelayed, said below).
#
# Checked for each run (any failure: a line naming it, exit 1):
#   - it ends by itself (time budget) within its share of the time plus a grace: no deadlock;
#   - resident memory of its processes, sampled every 5 s: the largest sample of the last two fifths of the run
#     exceeds the largest of the second fifth (libtorch's pools warmed up) by at most SOAK_RSS_GROWTH_MB (default 64);
#   - no lost message: AD-PSGD's exchanges initiated equal those served; SSP's and ALADDIN's servers received every
#     gradient the workers pushed (per shard: gradients_received = the workers' steps);
#   - training stayed sane: finite test loss.
# Figures go to SOAK_OUT (default runs/soak): each run's directory and soak.tsv (time, algorithm, total RSS in MB).
set -euo pipefail
cd "$(dirname "$0")/.."

minutes=${SOAK_MINUTES:-20}
growth_mb=${SOAK_RSS_GROWTH_MB:-64}
out=${SOAK_OUT:-runs/soak}
binary=build/distsgd
[ -x "$binary" ] || { echo "soak: $binary is missing (make build)" >&2; exit 1; }
mkdir -p "$out"
samples="$out/soak.tsv"
printf 'seconds\talgorithm\trss_mb\n' > "$samples"

network=()
if [ "$(id -u)" -eq 0 ]; then
  network=(--net "unshaped,delay=1ms,jitter=1ms")
  echo "soak: emulated cluster, every packet delayed 1 ms +- 1 ms" >&2
else
  export DISTSGD_SERVER_DELAY_MS=1
  echo "soak: not root, so loopback with parameter-server replies delayed 1 ms (AD-PSGD undelayed)" >&2
fi

# Total resident memory (MB) of the processes whose command line holds the run directory.
rss_of_run() {
  local dir=$1 total=0 pid kb
  for pid in $(pgrep -f -- "--out $dir" || true); do
    kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2> /dev/null || echo 0)
    total=$((total + ${kb:-0}))
  done
  echo $((total / 1024))
}

run_one() {
  local label=$1 seconds=$2
  shift 2
  local dir="$out/$label"
  echo "soak: $label for ${seconds} s ($*)" >&2
  "$binary" train "$@" --workers 4 --model lenet5 --dataset fashion-mnist --batch-size 32 --epochs 100000 \
    --time-budget "$seconds" --no-checkpoint --progress-seconds 60 --timeout 60 "${network[@]}" \
    --out "$dir" --overwrite > "$dir.log" 2>&1 &
  local pid=$! start=$SECONDS now rss
  local -a rss_samples=()
  while kill -0 "$pid" 2> /dev/null; do
    sleep 5
    now=$((SECONDS - start))
    rss=$(rss_of_run "$dir")
    # While training (the budget runs from the ranks' start, after launch): the final evaluation's peak is not growth.
    if [ "$rss" -gt 0 ] && [ "$now" -le "$seconds" ]; then rss_samples+=("$rss"); fi
    printf '%s\t%s\t%s\n' "$now" "$label" "$rss" >> "$samples"
    if [ "$now" -gt $((seconds + 180)) ]; then
      kill -- "$pid" 2> /dev/null || true
      echo "soak: $label: still running $now s into a ${seconds} s budget: stuck (see $dir.log)" >&2
      return 1
    fi
  done
  if ! wait "$pid"; then
    echo "soak: $label: the run failed: $(tail -1 "$dir.log")" >&2
    return 1
  fi
  # Steady state: the largest sample of the second fifth of the run (pools warmed up) against the largest of the
  # last two fifths.
  local n=${#rss_samples[@]} early=0 late=0 i
  if [ "$n" -lt 5 ]; then
    echo "soak: $label: only $n memory samples; give it more time (SOAK_MINUTES)" >&2
    return 1
  fi
  for ((i = n / 5; i < 2 * n / 5; i++)); do [ "${rss_samples[i]}" -gt "$early" ] && early=${rss_samples[i]}; done
  for ((i = 3 * n / 5; i < n; i++)); do [ "${rss_samples[i]}" -gt "$late" ] && late=${rss_samples[i]}; done
  echo "soak: $label: resident memory of its processes $early MB early in the run, at most $late MB late ($n samples)" >&2
  if [ "$late" -gt $((early + growth_mb)) ]; then
    echo "soak: $label: resident memory grew from $early MB to $late MB (bound: +$growth_mb MB)" >&2
    return 1
  fi
  python3 - "$dir/summary.json" "$label" << 'EOF'
import json, math, sys
summary, label = json.load(open(sys.argv[1])), sys.argv[2]
problems = []
if not math.isfinite(summary["test_loss"]):
    problems.append(f"test loss {summary['test_loss']}")
workers = summary["per_worker"]
steps = sum(w["steps"] for w in workers)
if summary["algorithm"] == "adpsgd":
    initiated = sum(w["exchanges_initiated"] for w in workers)
    served = sum(w["exchanges_served"] for w in workers)
    if initiated != served:
        problems.append(f"{initiated:.0f} exchanges initiated but {served:.0f} served")
    detail = f"{initiated:.0f} exchanges"
else:
    for shard in summary["server_statistics"]:
        if shard["gradients_received"] != steps:
            problems.append(f"shard {shard['shard']} received {shard['gradients_received']} gradients of {steps:.0f} pushed")
    detail = f"{steps:.0f} gradients pushed, every one received"
if problems:
    print(f"soak: {label}: " + "; ".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"soak: {label}: {steps:.0f} steps, {detail}, test accuracy {summary['test_accuracy']:.4f}", file=sys.stderr)
EOF
}

share=$((minutes * 60 / 3))
status=0
run_one adpsgd "$share" --algo adpsgd || status=1
run_one aladdin "$share" --algo aladdin --servers 1 --pi 1 --momentum 0.5 || status=1
run_one ssp "$share" --algo ssp --servers 1 --staleness 3 --momentum 0 || status=1
echo "soak: memory samples in $samples" >&2
exit $status
