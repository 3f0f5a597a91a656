#!/usr/bin/env bash
# Data-parallel training throughput of distsgd's AR-SGD (--overlap none, wfbp, multistep) against PyTorch 1.13 DDP
# over Gloo: 2 workers on this host, one compute thread each, batch 64 per worker, same model, same step count.
# The four run alternately, REPEATS times each; the table gives the median global samples/s, each variant's ratio to
# DDP, and distsgd's median per-iteration breakdown from summary.json (ms, averaged over the workers).
# Usage: bench/arsgd_vs_ddp.sh [models...]   (default: lenet5 mlp); env REPEATS (default 3), BUILD (default build),
# WORKERS (default 2), VARIANTS (default "none wfbp multistep"; also wfbp-ddp: wfbp with DDP's bucket boundaries for
# mlp, --first-bucket-mb 17, see bench/README.md)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPEATS=${REPEATS:-3}
WORKERS=${WORKERS:-2}
PYTHON=${PYTHON:-/usr/bin/python3}
models=("$@")
[ $# -gt 0 ] || models=(lenet5 mlp)
read -r -a variants <<< "${VARIANTS:-none wfbp multistep}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

source bench/lib.sh
# One line per run: samples/s and the breakdown in ms per iteration.
summary_line() {
  "$PYTHON" -c "import json; s = json.load(open('$1')); t = s['seconds_per_iteration']
print(s['samples_per_second'], *(1000 * t[k] for k in ('forward', 'backward', 'communication_wait', 'update')))"
}
variant_flags() {
  case $1 in
    wfbp-ddp) echo "--overlap wfbp --first-bucket-mb 17" ;;
    *) echo "--overlap $1" ;;
  esac
}
# Median of column $2 of file $1.
column_median() { awk -v c="$2" '{print $c}' "$1" | median; }

for model in "${models[@]}"; do
  steps=$(steps_for "$model")
  for r in $(seq "$REPEATS"); do
    for v in "${variants[@]}"; do
      "$BUILD/distsgd" train --algo arsgd --workers "$WORKERS" $(variant_flags "$v") --model "$model" \
        --dataset fashion-mnist --batch-size 64 --threads 1 --max-steps "$steps" --no-checkpoint \
        --progress-seconds 1000 --out "$out/run-$model-$v-$r" >/dev/null 2>"$out/err" \
        || { cat "$out/err" >&2; exit 1; }
      summary_line "$out/run-$model-$v-$r/summary.json" >> "$out/$model-$v"
    done
    "$PYTHON" bench/ddp_peer.py --model "$model" --workers "$WORKERS" --steps "$steps" --threads 1 |
      "$PYTHON" -c "import json, sys; print(json.load(sys.stdin)['samples_per_second'])" >> "$out/$model-ddp"
  done
done

echo "global samples/s, $WORKERS workers x 1 thread, batch 64 per worker, median of $REPEATS; breakdown: ms per" \
  "iteration (distsgd summary.json, mean over workers)"
printf '%-7s %-14s %10s %7s %9s %9s %10s %8s\n' model system samples/s vs_ddp forward backward comm_wait update
for model in "${models[@]}"; do
  ddp=$(median < "$out/$model-ddp")
  for v in "${variants[@]}"; do
    f="$out/$model-$v"
    awk -v m="$model" -v v="arsgd-$v" -v d="$(column_median "$f" 1)" -v p="$ddp" -v fw="$(column_median "$f" 2)" \
      -v bw="$(column_median "$f" 3)" -v cw="$(column_median "$f" 4)" -v up="$(column_median "$f" 5)" \
      'BEGIN { printf "%-7s %-14s %10.0f %6.2fx %9.2f %9.2f %10.2f %8.2f\n", m, v, d, d / p, fw, bw, cw, up }'
  done
  awk -v m="$model" -v p="$ddp" 'BEGIN { printf "%-7s %-14s %10.0f %6.2fx\n", m, "ddp", p, 1 }'
done
