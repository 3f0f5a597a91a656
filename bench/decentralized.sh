#!/usr/bin/env bash
# Throughput of the decentralized algorithms against AR-SGD: 4 workers on this host, lenet5 and mlp on
# Fashion-MNIST, batch 32 per worker, with all workers at full speed and with worker 3 at --slowdown 3:10.
# Prints samples/s and the ratio to AR-SGD in the same condition, in one run. samples/s is the sum over workers of
# each worker's own rate (batch / its seconds per iteration, from summary.json's per_worker): what the cluster
# processes while every worker runs. Every worker does the same number of iterations, so with a straggler the fast
# asynchronous workers finish early; summary.json's samples_per_second (worker 0's steps x global batch / worker 0's
# training time) would credit the straggler with worker 0's speed, and the run's wall time charges the fast workers
# with the straggler's; the sum of rates does neither.
# Usage: bench/decentralized.sh [models...]  (default: lenet5 mlp); env BUILD (default build), STEPS_LENET5 (300),
# STEPS_MLP (100)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
models=("$@")
[ $# -gt 0 ] || models=(lenet5 mlp)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

algos=(
  "arsgd|--algo arsgd"
  "gosgd p=0.01|--algo gosgd --gossip-prob 0.01"
  "gosgd p=1|--algo gosgd --gossip-prob 1"
  "gossip pull|--algo gossip --gossip-mode pull"
  "gossip push|--algo gossip --gossip-mode push"
  "adpsgd|--algo adpsgd"
  "sgp overlap 0|--algo sgp --sgp-overlap 0"
  "sgp overlap 1|--algo sgp --sgp-overlap 1"
)
steps_for() { case $1 in lenet5) echo "${STEPS_LENET5:-300}" ;; *) echo "${STEPS_MLP:-100}" ;; esac; }

printf '%-7s %-14s %12s %8s %12s %8s\n' model algorithm samples/s ratio 'slow:s/s' ratio
for model in "${models[@]}"; do
  steps=$(steps_for "$model")
  declare -A base=()
  for entry in "${algos[@]}"; do
    name=${entry%%|*}
    flags=${entry#*|}
    line=$(printf '%-7s %-14s' "$model" "$name")
    for condition in fast slow; do
      extra=""
      [ "$condition" = slow ] && extra="--slowdown 3:10"
      dir="$out/$model-$condition"
      # shellcheck disable=SC2086
      "$BUILD/distsgd" train $flags $extra --workers 4 --model "$model" --dataset fashion-mnist --batch-size 32 \
        --epochs 100 --max-steps "$steps" --no-checkpoint --progress-seconds 1000 --out "$dir" --overwrite \
        > "$out/log" 2>&1 || { cat "$out/log" >&2; exit 1; }
      sps=$(python3 -c "
import json
s = json.load(open('$dir/summary.json'))
print(sum(s['batch_size'] / sum(w['seconds_per_iteration'].values()) for w in s['per_worker']))")
      [ "$name" = arsgd ] && base[$condition]=$sps
      line+=$(awk -v s="$sps" -v b="${base[$condition]}" 'BEGIN { printf " %12.0f %7.2fx", s, s / b }')
    done
    echo "$line"
  done
done
