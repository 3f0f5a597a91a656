#!/usr/bin/env bash
# The low-communication family against AR-SGD on real data (issue 24's accuracy check): lenet5 on Fashion-MNIST,
# 4 workers on this host, batch 32 per worker, lr 0.05, 2 epochs; each method at its recipe (the inner optimizer
# momentum SGD, as AR-SGD's; DiLoCo's paper settings, outer Nesterov 0.7/0.9 over an AdamW inner optimizer, last). Prints final test
# accuracy (of the workers' average model, for the local methods), its difference to AR-SGD, samples/s and bytes
# sent per worker per sample, one row per method, and keeps the run directories.
# Usage: bench/low_communication.sh [OUT]  (default /tmp/low-communication); env BUILD (build), EPOCHS (2), SEED (1),
# ONLY (an extended regular expression: only the methods whose name matches it, beside arsgd, the baseline)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
out=${1:-/tmp/low-communication}
epochs=${EPOCHS:-2}
seed=${SEED:-1}
mkdir -p "$out"

methods=(
  "arsgd|--algo arsgd"
  "localsgd H=8|--algo localsgd --sync-every 8"
  "slowmo H=8 a=0.5 b=0.5|--algo slowmo --sync-every 8 --slow-lr 0.5 --slow-momentum 0.5"
  "slowmo over sgp H=8 a=0.5 b=0.5|--algo slowmo --base sgp --sync-every 8 --slow-lr 0.5 --slow-momentum 0.5"
  "diloco H=8 outer 0.5/0.7|--algo diloco --sync-every 8 --outer-lr 0.5 --outer-momentum 0.7"
  "streaming F=2 d=1 4-bit|--algo diloco --sync-every 8 --outer-lr 0.5 --outer-momentum 0.7 --fragments 2 --fragment-delay 1 --outer-bits 4"
  "diloco H=8 outer 0.7/0.9 (paper)|--algo diloco --sync-every 8"
)

printf '%-32s %9s %7s %10s %13s\n' method accuracy delta samples/s bytes/sample
base=""
for entry in "${methods[@]}"; do
  name=${entry%%|*}
  flags=${entry#*|}
  if [ -n "${ONLY:-}" ] && [ "$name" != arsgd ] && ! [[ $name =~ $ONLY ]]; then continue; fi
  dir="$out/$(echo "$name" | tr ' =/' '___')"
  # shellcheck disable=SC2086
  "$BUILD/distsgd" train --model lenet5 --dataset fashion-mnist --workers 4 --batch-size 32 --lr 0.05 \
    --epochs "$epochs" --seed "$seed" --no-checkpoint --progress-seconds 1000 --overwrite --out "$dir" $flags \
    > "$dir.log" 2>&1 || { echo "$name failed: see $dir.log" >&2; continue; }
  read -r accuracy rate bytes < <(python3 -c "
import json,sys
s=json.load(open('$dir/summary.json'))
print(s['test_accuracy'], s['samples_per_second'], s['bytes_sent_per_worker'] / max(1, s['samples_trained'] / s['workers']))")
  [ -n "$base" ] || base=$accuracy
  printf '%-32s %9.4f %+7.4f %10.0f %13.1f\n' "$name" "$accuracy" "$(python3 -c "print($accuracy - $base)")" "$rate" "$bytes"
done
