#!/usr/bin/env bash
# The low-communication family on a language model (issue 24): gpt-mini (the defaults: 2 layers, 4 heads, dim 64,
# context 64) on the fortunes corpus, 4 workers on this host, batch 16 per worker, AdamW lr 3e-3 as every method's
# inner optimizer (DiLoCo's paper pairing), the same number of samples for each (STEPS per worker). Prints test loss
# (nats) and bits per byte of the workers' average model, the loss against AR-SGD's, samples/s and bytes per sample.
# Usage: bench/low_communication_lm.sh [OUT]  (default /tmp/low-communication-lm); env BUILD (build), STEPS (600),
# SEED (1)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
out=${1:-/tmp/low-communication-lm}
steps=${STEPS:-600}
seed=${SEED:-1}
mkdir -p "$out"

methods=(
  "arsgd|--algo arsgd"
  "localsgd H=50|--algo localsgd --sync-every 50"
  "diloco H=50 (outer 0.7/0.9)|--algo diloco --sync-every 50"
  "streaming diloco H=50 F=2 d=5 4-bit|--algo diloco --sync-every 50 --fragments 2 --fragment-delay 5 --outer-bits 4"
)

printf '%-38s %9s %7s %8s %10s %13s\n' method test_loss vs_ar bits/B samples/s bytes/sample
base=""
for entry in "${methods[@]}"; do
  name=${entry%%|*}
  flags=${entry#*|}
  dir="$out/$(echo "$name" | tr ' =/()' '_____')"
  # shellcheck disable=SC2086
  "$BUILD/distsgd" train --model gpt-mini --dataset text --workers 4 --batch-size 16 --optimizer adamw --lr 0.003 \
    --weight-decay 0.01 --threads 1 --max-steps "$steps" --epochs 100 --seed "$seed" --no-checkpoint \
    --progress-seconds 1000 --overwrite --out "$dir" $flags > "$dir.log" 2>&1 ||
    { echo "$name failed: see $dir.log" >&2; continue; }
  read -r loss bits rate bytes < <(python3 -c "
import json
s=json.load(open('$dir/summary.json'))
print(s['test_loss'], s['test_bits_per_byte'], s['samples_per_second'], s['bytes_sent_per_worker'] / max(1, s['samples_trained'] / s['workers']))")
  [ -n "$base" ] || base=$loss
  printf '%-38s %9.4f %+6.1f%% %8.3f %10.0f %13.1f\n' "$name" "$loss" "$(python3 -c "print(100 * ($loss / $base - 1))")" \
    "$bits" "$rate" "$bytes"
done
