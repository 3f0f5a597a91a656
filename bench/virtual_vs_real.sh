#!/usr/bin/env bash
# The virtual cluster against real multi-process runs of the same recipe (issue 23's statistics): lenet5 on
# Fashion-MNIST, 4 workers, 2 epochs; for each asynchronous or decentralized algorithm the real runs' test accuracy
# over SEEDS seeds beside one virtual run per seed, on a cluster description of this host (commbench --cluster-out)
# and a profile measured here. Usage: bench/virtual_vs_real.sh [OUT_DIR] [SEEDS]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/distsgd-virtual-vs-real}
seeds=${2:-3}
mkdir -p "$out"
bin=build/distsgd
common="--model lenet5 --dataset fashion-mnist --workers 4 --epochs 2 --lr-decay-epochs 1.5 --lr 0.05 --no-checkpoint --progress-seconds 1000"
[ -f "$out/profile.json" ] || $bin profile --model lenet5 --batch-size 16 --threads 1 --out "$out/profile.json" >/dev/null
[ -f "$out/loopback.json" ] || $bin commbench --processes 4 --cluster-out "$out/loopback.json" >/dev/null
recipes=(
  "asp|--algo asp --servers 1 --momentum 0 --batch-size 16"
  "ssp|--algo ssp --staleness 3 --servers 1 --momentum 0 --batch-size 16"
  "easgd|--algo easgd --tau 2 --servers 1 --batch-size 16"
  "aladdin|--algo aladdin --servers 1 --pi 1 --momentum 0.5 --batch-size 16"
  "gosgd|--algo gosgd --gossip-prob 0.1 --batch-size 16"
  "gossip|--algo gossip --batch-size 16"
  "adpsgd|--algo adpsgd --batch-size 16"
)
printf '%-8s %-28s %-28s %s\n' algo "real accuracy (mean, seeds)" "virtual accuracy (mean)" "staleness real / virtual"
for recipe in "${recipes[@]}"; do
  name=${recipe%%|*}
  flags=${recipe#*|}
  for seed in $(seq 1 "$seeds"); do
    [ -f "$out/$name-real-$seed/summary.json" ] ||
      $bin train $flags $common --seed "$seed" --out "$out/$name-real-$seed" --overwrite >/dev/null 2>&1
    [ -f "$out/$name-virtual-$seed/summary.json" ] ||
      $bin train $flags $common --seed "$seed" --virtual --profile "$out/profile.json" --cluster "$out/loopback.json" \
        --out "$out/$name-virtual-$seed" --overwrite >/dev/null 2>&1
  done
  python3 - "$out" "$name" "$seeds" <<'PY'
import json, sys
out, name, seeds = sys.argv[1], sys.argv[2], int(sys.argv[3])
def figures(kind):
    s = [json.load(open(f"{out}/{name}-{kind}-{i}/summary.json")) for i in range(1, seeds + 1)]
    acc = [x["test_accuracy"] for x in s]
    stale = [x.get("staleness_mean") for x in s if x.get("staleness_mean") is not None]
    return sum(acc) / len(acc), acc, (sum(stale) / len(stale) if stale else None)
r, ra, rs = figures("real")
v, va, vs = figures("virtual")
st = f"{rs:.2f} / {vs:.2f}" if rs is not None else "-"
print(f"{name:8s} {r:.4f} {str([round(a, 4) for a in ra]):19s} {v:.4f} {str([round(a, 4) for a in va]):19s} {st}   diff {100 * (v - r):+.2f} points")
PY
done
