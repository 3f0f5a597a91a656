#!/usr/bin/env bash
# The virtual cluster at scale (README, "Accuracy at scale: --virtual"): wall time and peak memory of virtual runs
# of lenet5 on Fashion-MNIST, and the cost of 64 virtual workers against one process training the same samples
# (side by side in one run, as ratios: the host is shared). Usage: bench/virtual_scale.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
out=${1:-/tmp/distsgd-virtual-scale}
mkdir -p "$out"
bin=build/distsgd
common="--model lenet5 --dataset fashion-mnist --lr 0.01 --momentum 0 --seed 1 --no-checkpoint --progress-seconds 1000"

# Runs one timed command; prints "label wall_s peak_MB result-line-fields".
timed() {
  local label=$1
  shift
  /usr/bin/time -f "%e %M" -o "$out/$label.time" "$@" >"$out/$label.log" 2>&1 || {
    echo "$label failed:"
    tail -3 "$out/$label.log"
    return 1
  }
  read -r wall kb <"$out/$label.time"
  local summary=$out/$label/summary.json
  printf '%-28s wall %7.1f s  peak %7.0f MB  %s\n' "$label" "$wall" "$((kb / 1024))" \
    "$(python3 -c "import json,sys; s=json.load(open('$summary')); print('virtual %.2f s, accuracy %.4f, staleness %s' % (s['wall_seconds'], s['test_accuracy'], s.get('staleness_mean', '-')))")"
}

echo "== 1,024 virtual workers, 1 epoch (batch 16: 3 steps each)"
timed asp-1024 $bin train --algo asp --workers 1024 --servers 8 --batch-size 16 --epochs 1 --virtual --profile titan-v \
  --cluster ipdps2021-10gbe $common --out "$out/asp-1024" --overwrite
timed adpsgd-1024 $bin train --algo adpsgd --workers 1024 --batch-size 16 --epochs 1 --virtual --profile titan-v \
  --cluster ipdps2021-10gbe $common --out "$out/adpsgd-1024" --overwrite

echo "== 64 virtual workers against one process, 2 epochs of the same samples (batch 32 each; global 2048)"
for round in 1 2 3; do
  timed "single-$round" $bin train --algo sgd --workers 1 --batch-size 2048 --epochs 2 --threads 1 $common \
    --out "$out/single-$round" --overwrite
  timed "arsgd-64-$round" $bin train --algo arsgd --workers 64 --batch-size 32 --epochs 2 --virtual \
    --profile titan-v --cluster ipdps2021-10gbe $common --out "$out/arsgd-64-$round" --overwrite
  timed "asp-64-$round" $bin train --algo asp --workers 64 --servers 4 --batch-size 32 --epochs 2 --virtual \
    --profile titan-v --cluster ipdps2021-10gbe $common --out "$out/asp-64-$round" --overwrite
done
for kind in arsgd-64 asp-64; do
  ratio=$(for round in 1 2 3; do
    read -r v _ <"$out/$kind-$round.time"
    read -r s _ <"$out/single-$round.time"
    python3 -c "print($v / $s)"
  done | median)
  echo "$kind / single process, median of 3 paired rounds: ${ratio}x"
done
