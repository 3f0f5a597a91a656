#!/usr/bin/env bash
# The demo comparison: every algorithm implemented so far, 4 workers, lenet5 on Fashion-MNIST, one recipe (batch 32
# per worker, lr 0.05, decay x0.1 for the last quarter) adjusted per algorithm where noted below; one table of
# algorithm, test accuracy (for the decentralized ones: of the average of the workers' models, and worker 0's own),
# samples/s and wall time.
# Usage: scripts/compare.sh   env: BUILD (default build), EPOCHS (default 2), OUT (default runs/compare)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
EPOCHS=${EPOCHS:-2}
OUT=${OUT:-runs/compare}
decay=$(awk -v e="$EPOCHS" 'BEGIN { print e * 0.75 }')
mkdir -p "$OUT"

# ASP and SSP apply every worker's gradient separately, and that asynchrony acts as momentum of about 1 - 1/n
# (Mitliagkas et al. 2016): they run without explicit momentum. ALADDIN runs with pi 1 and local momentum 0.5.
# These three apply every gradient to the servers' model as it comes, so more, smaller gradients help them: batch 16
# (the recipes are measured in bench/README.md). DGC: 0.1% of each tensor per step after a one-epoch warm-up. An entry may set its
# own --batch-size; the others use 32.
runs=(
  "arsgd|--algo arsgd --lr 0.05"
  "arsgd dgc 0.1%|--algo arsgd --lr 0.05 --compress dgc --density 0.001 --dgc-warmup-epochs 1"
  "bsp (1 server)|--algo bsp --servers 1 --lr 0.05"
  "bsp dgc 0.1%|--algo bsp --servers 1 --lr 0.05 --compress dgc --density 0.001 --dgc-warmup-epochs 1"
  "asp b16|--algo asp --servers 1 --lr 0.05 --momentum 0 --batch-size 16"
  "ssp s=3 b16|--algo ssp --servers 1 --staleness 3 --lr 0.05 --momentum 0 --batch-size 16"
  "easgd tau=2|--algo easgd --servers 1 --tau 2 --lr 0.05"
  "aladdin pi=1 b16|--algo aladdin --servers 1 --pi 1 --lr 0.05 --momentum 0.5 --batch-size 16"
  "gosgd p=0.1|--algo gosgd --gossip-prob 0.1 --lr 0.05"
  "gossip pull|--algo gossip --gossip-mode pull --lr 0.05"
  "gossip push|--algo gossip --gossip-mode push --lr 0.05"
  "adpsgd|--algo adpsgd --lr 0.05"
  "sgp overlap 0|--algo sgp --sgp-overlap 0 --lr 0.05"
  "sgp overlap 1|--algo sgp --sgp-overlap 1 --lr 0.05"
)

table="$OUT/table.txt"
printf '%-16s %9s %9s %10s %9s\n' algorithm accuracy worker0 samples/s wall_s > "$table"
i=0
for entry in "${runs[@]}"; do
  name=${entry%%|*}
  flags=${entry#*|}
  i=$((i + 1))
  echo "[$i/${#runs[@]}] $name" >&2
  batch="--batch-size 32"
  [[ $flags == *--batch-size* ]] && batch=""
  # shellcheck disable=SC2086
  "$BUILD/distsgd" train $flags $batch --workers 4 --model lenet5 --dataset fashion-mnist --epochs "$EPOCHS" \
    --lr-decay-epochs "$decay" --seed 1 --no-checkpoint --progress-seconds 1000 \
    --out "$OUT/run-$i" --overwrite > "$OUT/run-$i.log" 2>&1 || { echo "$name failed: see $OUT/run-$i.log" >&2; continue; }
  python3 - "$OUT/run-$i/summary.json" "$name" >> "$table" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
w0 = s.get("test_accuracy_worker0")
print("%-16s %9.4f %9s %10.0f %9.1f" % (sys.argv[2], s["test_accuracy"], "%.4f" % w0 if w0 is not None else "-",
                                         s["samples_per_second"], s["wall_seconds"]))
PY
done
cat "$table"
