#!/usr/bin/env bash
# PowerSGD side by side: distsgd's AR-SGD with --compress powersgd against PyTorch 1.13 DDP with powerSGD_hook, and
# both without compression (distsgd --overlap none, DDP's default), at 2 workers on this host, one compute thread
# each, batch 64 per worker, the same step count (one epoch of Fashion-MNIST by default), ranks 2 and 8, the first
# --powersgd-start steps (10) plain allreduces on both sides. The runs alternate, REPEATS times each; the table gives
# the median global samples/s, its ratio to the DDP run of the same compression, and the median final test
# accuracy (distsgd: summary.json; DDP: rank 0's model on the whole test set after the last step).
# Usage: bench/powersgd_vs_ddp.sh [models...]   (default: lenet5); env REPEATS (3), BUILD (build), WORKERS (2),
# RANKS ("2 8"), STEPS (468: one epoch at 2 x 64), START (10)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPEATS=${REPEATS:-3}
WORKERS=${WORKERS:-2}
PYTHON=${PYTHON:-/usr/bin/python3}
STEPS=${STEPS:-468}
START=${START:-10}
read -r -a ranks <<< "${RANKS:-2 8}"
models=("$@")
[ $# -gt 0 ] || models=(lenet5)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
source bench/lib.sh

# rank 0: no compression
distsgd_run() {  # model rank repeat
  local flags="--overlap none"
  [ "$2" = 0 ] || flags="--compress powersgd --rank $2 --powersgd-start $START"
  "$BUILD/distsgd" train --algo arsgd --workers "$WORKERS" $flags --model "$1" --dataset fashion-mnist \
    --batch-size 64 --lr 0.05 --threads 1 --max-steps "$STEPS" --seed 1 --no-checkpoint --progress-seconds 1000 \
    --out "$out/run-$1-$2-$3" >/dev/null 2>"$out/err" || { cat "$out/err" >&2; exit 1; }
  "$PYTHON" -c "import json; s = json.load(open('$out/run-$1-$2-$3/summary.json'))
print(s['samples_per_second'], s['test_accuracy'], s['bytes_sent_per_worker'] / $STEPS)" >> "$out/$1-distsgd-$2"
}
ddp_run() {  # model rank
  "$PYTHON" bench/ddp_peer.py --model "$1" --workers "$WORKERS" --steps "$STEPS" --threads 1 --lr 0.05 \
    --powersgd-rank "$2" --powersgd-start "$START" --evaluate |
    "$PYTHON" -c "import json, sys; r = json.load(sys.stdin); print(r['samples_per_second'], r['test_accuracy'])" \
      >> "$out/$1-ddp-$2"
}
column_median() { awk -v c="$2" '{print $c}' "$1" | median; }

for model in "${models[@]}"; do
  for r in $(seq "$REPEATS"); do
    for rank in 0 "${ranks[@]}"; do
      distsgd_run "$model" "$rank" "$r"
      ddp_run "$model" "$rank"
    done
  done
done

echo "$WORKERS workers x 1 thread, batch 64 per worker, $STEPS steps, lr 0.05, powersgd-start $START; median of" \
  "$REPEATS: global samples/s, final test accuracy; distsgd's bytes sent per worker per step"
printf '%-7s %-22s %10s %7s %9s %12s\n' model system samples/s vs_ddp accuracy bytes/step
for model in "${models[@]}"; do
  for rank in 0 "${ranks[@]}"; do
    name="plain allreduce"
    [ "$rank" = 0 ] || name="powersgd rank $rank"
    d="$out/$model-distsgd-$rank"
    p="$out/$model-ddp-$rank"
    ddp=$(column_median "$p" 1)
    awk -v m="$model" -v n="distsgd $name" -v s="$(column_median "$d" 1)" -v p="$ddp" -v a="$(column_median "$d" 2)" \
      -v b="$(column_median "$d" 3)" \
      'BEGIN { printf "%-7s %-22s %10.0f %6.2fx %9.4f %12.0f\n", m, n, s, s / p, a, b }'
    awk -v m="$model" -v n="ddp $name" -v p="$ddp" -v a="$(column_median "$p" 2)" \
      'BEGIN { printf "%-7s %-22s %10.0f %6.2fx %9.4f\n", m, n, p, 1, a }'
  done
done
