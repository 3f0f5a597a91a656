#!/usr/bin/env bash
# Throughput of the asynchronous parameter-server algorithms against BSP, and their robustness to a slow worker:
# 4 workers and 1 server on this host, lenet5 and mlp on Fashion-MNIST, batch 32 per worker, each run training
# for a fixed wall-time window (--time-budget) once with every worker at full speed and once with worker 3 at
# --slowdown 3:10. Prints samples/s, the ratio to BSP in the same condition, and each algorithm's slow/fast ratio.
#
# samples/s is summary.json's samples_per_second: the sum over workers of each worker's own rate (its samples /
# its training seconds). Asynchronous workers stop on their own at the budget (no per-step agreement, no
# epoch-end evaluation: algo.independent_workers), so each contributes what it did while all were running; the
# synchronous baselines (bsp, arsgd) agree on the stop with one 8-byte allreduce per step.
# Usage: bench/async_ps.sh [models...]  (default: lenet5 mlp)
# env: BUILD (default build), BUDGET (seconds per run, default 15), REPEATS (default 1: the best of REPEATS runs)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BUDGET=${BUDGET:-15}
REPEATS=${REPEATS:-1}
models=("$@")
[ $# -gt 0 ] || models=(lenet5 mlp)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# The demo's recipes (scripts/compare.sh), all at batch 32: ASP and SSP without momentum, which diverge with it.
algos=(
  "bsp|--algo bsp --servers 1"
  "asp|--algo asp --servers 1 --momentum 0"
  "ssp s=3|--algo ssp --servers 1 --staleness 3 --momentum 0"
  "ssp s=10|--algo ssp --servers 1 --staleness 10 --momentum 0"
  "easgd tau=2|--algo easgd --servers 1 --tau 2"
  "aladdin pi=4|--algo aladdin --servers 1 --pi 4"
  "aladdin pi=1|--algo aladdin --servers 1 --pi 1 --momentum 0.5"
  "arsgd|--algo arsgd"
)

# Best samples/s of REPEATS runs (the machine is shared: the best is the least disturbed).
measure() {
  local flags=$1 dir=$out/run best=0
  for _ in $(seq "$REPEATS"); do
    # shellcheck disable=SC2086
    "$BUILD/distsgd" train $flags --workers 4 --model "$model" --dataset fashion-mnist --batch-size 32 \
      --epochs 1000 --time-budget "$BUDGET" --no-checkpoint --progress-seconds 1000 --out "$dir" --overwrite \
      > "$out/log" 2>&1 || { cat "$out/log" >&2; exit 1; }
    best=$(python3 -c "
import json
s = json.load(open('$dir/summary.json'))
print(max($best, s['samples_per_second']))")
  done
  echo "$best"
}

printf '%-7s %-13s %10s %9s %10s %9s %10s\n' model algorithm samples/s 'vs bsp' 'slow s/s' 'vs bsp' 'slow/fast'
for model in "${models[@]}"; do
  declare -A base=()
  for entry in "${algos[@]}"; do
    name=${entry%%|*}
    flags=${entry#*|}
    fast=$(measure "$flags")
    slow=$(measure "$flags --slowdown 3:10")
    if [ "$name" = bsp ]; then
      base[fast]=$fast
      base[slow]=$slow
    fi
    awk -v m="$model" -v n="$name" -v f="$fast" -v s="$slow" -v bf="${base[fast]}" -v bs="${base[slow]}" \
      'BEGIN { printf "%-7s %-13s %10.0f %8.2fx %10.0f %8.2fx %10.2f\n", m, n, f, f / bf, s, s / bs, s / f }'
  done
done
