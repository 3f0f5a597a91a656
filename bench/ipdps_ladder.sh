#!/usr/bin/env bash
# The IPDPS optimization ladder (Ko et al., IPDPS 2021, the parameter-server optimizations): BSP, ASP and SSP with
# none, + parameter sharding, + wait-free backprop, + Deep Gradient Compression, each rung adding to the one before.
# 4 workers, mlp (784-1024-1024-10, 1.9M parameters) and lenet5 on Fashion-MNIST, batch 32 per worker, each run
# training for a fixed wall-time window (--time-budget). Prints samples/s, the ratio to the same algorithm's "none"
# rung, the exposed communication wait per iteration and the bytes each worker sent per iteration.
#   none:      1 server, --overlap none (every push after backward)
#   +sharding: 4 servers (--sharding memory: equal contiguous ranges)
#   +wfbp:     --overlap wfbp: each 1 MB bucket's shard pieces pushed during backward (--bucket-mb 1, so the mlp's
#              two large layers go in separate buckets, as the paper's per-layer pushes)
#   +dgc:      --compress dgc --density 0.001 from the first step (--dgc-warmup-epochs 0: the throughput at the
#              target density; training for accuracy wants the warm-up); DGC selects from the whole gradient after
#              backward, so this rung pushes after backward (wfbp does not combine with it)
# ASP and SSP run without momentum (bench/async_ps.sh's recipes: they diverge with it); SSP with s=10.
# With NET set (e.g. NET=1gbit, needs root or user namespaces) every rank runs on its own emulated host.
# Usage: bench/ipdps_ladder.sh [models...]  (default: mlp lenet5)
# env: BUILD (default build), BUDGET (seconds per run, default 15), NET (default: none, loopback), REPEATS (default
#      1: the run with the best samples/s of REPEATS), CSV (also write every row to this file)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BUDGET=${BUDGET:-15}
NET=${NET:-}
REPEATS=${REPEATS:-1}
models=("$@")
[ $# -gt 0 ] || models=(mlp lenet5)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

algos=(
  "bsp|--algo bsp"
  "asp|--algo asp --momentum 0"
  "ssp s=10|--algo ssp --staleness 10 --momentum 0"
)
rungs=(
  "none|--servers 1 --overlap none"
  "+sharding|--servers 4 --overlap none"
  "+wfbp|--servers 4 --overlap wfbp --bucket-mb 1"
  "+dgc|--servers 4 --compress dgc --density 0.001 --dgc-warmup-epochs 0"
)

# Prints "samples/s wait_ms_per_iteration bytes_per_worker_per_iteration" of the best of REPEATS runs.
measure() {
  local flags=$1 dir=$out/run best="0 0 0" line
  local net_flags=()
  [ -z "$NET" ] || net_flags=(--net "$NET")
  for _ in $(seq "$REPEATS"); do
    # shellcheck disable=SC2086
    "$BUILD/distsgd" train $flags --workers 4 --model "$model" --mlp-width 1024 --dataset fashion-mnist \
      --batch-size 32 --epochs 1000 --time-budget "$BUDGET" --no-checkpoint --progress-seconds 1000 --threads 1 \
      "${net_flags[@]}" --out "$dir" --overwrite > "$out/log" 2>&1 || { cat "$out/log" >&2; return 1; }
    line=$(python3 -c "
import json
s = json.load(open('$dir/summary.json'))
steps = sum(w['steps'] for w in s['per_worker']) / len(s['per_worker'])
print(s['samples_per_second'], 1000 * s['seconds_per_iteration']['communication_wait'],
      s['bytes_sent_per_worker'] / max(steps, 1))")
    best=$(printf '%s\n%s\n' "$best" "$line" | sort -g -k1,1 | tail -1)
  done
  echo "$best"
}

header="model,network,algorithm,rung,samples_per_second,ratio_to_none,wait_ms,bytes_per_iteration"
[ -z "${CSV:-}" ] || echo "$header" > "$CSV"
network=${NET:-loopback}
printf '%-7s %-9s %-9s %-10s %10s %8s %9s %12s\n' \
  model network algorithm rung samples/s 'vs none' 'wait ms' 'bytes/iter'
for model in "${models[@]}"; do
  for entry in "${algos[@]}"; do
    name=${entry%%|*}
    base=
    for rung in "${rungs[@]}"; do
      label=${rung%%|*}
      result=$(measure "${entry#*|} ${rung#*|}") || exit 1
      read -r rate wait bytes <<< "$result"
      [ -n "$base" ] || base=$rate
      awk -v m="$model" -v n="$network" -v a="$name" -v l="$label" -v r="$rate" -v b="$base" -v w="$wait" \
        -v y="$bytes" 'BEGIN { printf "%-7s %-9s %-9s %-10s %10.0f %7.2fx %9.1f %12.0f\n", m, n, a, l, r, r / b, w, y }'
      [ -z "${CSV:-}" ] || awk -v m="$model" -v n="$network" -v a="$name" -v l="$label" -v r="$rate" -v b="$base" \
        -v w="$wait" -v y="$bytes" 'BEGIN { printf "%s,%s,%s,%s,%.1f,%.3f,%.2f,%.0f\n", m, n, a, l, r, r / b, w, y }' \
        >> "$CSV"
    done
  done
done
