# What the bench scripts share (sourced after they cd to the repository's root).

# The median of the numbers read one per line (the lower middle one of an even count).
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Training steps per timed run of a model in the single-process and AR-SGD benchmarks (a few seconds each).
steps_for() { case $1 in lenet5) echo 400 ;; mlp) echo 200 ;; *) echo 200 ;; esac; }
