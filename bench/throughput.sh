#!/usr/bin/env bash
# Single-process training throughput of distsgd against PyTorch 1.13 (Python), same model, batch 64, one thread.
# Runs the two alternately, REPEATS times each, and reports the median samples/s of each and their ratio.
# Usage: bench/throughput.sh [models...]   (default: lenet5 mlp); env REPEATS (default 3), BUILD (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPEATS=${REPEATS:-3}
models=("$@")
[ $# -gt 0 ] || models=(lenet5 mlp)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

source bench/lib.sh

printf '%-8s %14s %14s %8s\n' model distsgd pytorch ratio
for model in "${models[@]}"; do
  steps=$(steps_for "$model")
  : > "$out/d" ; : > "$out/p"
  for r in $(seq "$REPEATS"); do
    "$BUILD/distsgd" train --model "$model" --dataset fashion-mnist --batch-size 64 --threads 1 \
      --max-steps "$steps" --no-checkpoint --progress-seconds 1000 --out "$out/run-$model-$r" >/dev/null 2>&1
    python3 -c "import json;print(json.load(open('$out/run-$model-$r/summary.json'))['samples_per_second'])" >> "$out/d"
    /usr/bin/python3 bench/pytorch_peer.py --model "$model" --steps "$steps" --threads 1 |
      python3 -c "import json,sys;print(json.load(sys.stdin)['samples_per_second'])" >> "$out/p"
  done
  d=$(median < "$out/d"); p=$(median < "$out/p")
  awk -v m="$model" -v d="$d" -v p="$p" 'BEGIN { printf "%-8s %14.0f %14.0f %7.2fx\n", m, d, p, d / p }'
done
