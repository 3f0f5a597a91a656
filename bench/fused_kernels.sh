#!/usr/bin/env bash
# Issue 15's end-to-end figures: a binary built before the fused update kernels (BEFORE) against the current one
# (BUILD), side by side, each run alternating with the others, REPEATS times, medians reported:
#   single   lenet5 and mlp, one process, one thread, batch 64 (bench/throughput.sh's runs), with PyTorch 1.13;
#            samples/s and the update's share of the step (summary.json's seconds_per_iteration.update)
#   arsgd    mlp, AR-SGD 2 workers x 1 thread, batch 64 (bench/arsgd_vs_ddp.sh's runs), with PyTorch DDP (Gloo)
#   asp      mlp, ASP on 1 server and 4 workers, batch 32, --momentum 0, BUDGET seconds each (bench/async_ps.sh's
#            recipe); gradients the server applied per second = samples/s / 32
# Usage: BEFORE=/path/to/old/distsgd bench/fused_kernels.sh [single] [arsgd] [asp]   (default: all three)
# env: BUILD (default build), REPEATS (default 3), BUDGET (default 15), ARSGD_OVERLAP (default "none wfbp")
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPEATS=${REPEATS:-3}
BUDGET=${BUDGET:-15}
PYTHON=${PYTHON:-/usr/bin/python3}
: "${BEFORE:?set BEFORE to a distsgd binary built before the fused kernels}"
parts=("$@")
[ $# -gt 0 ] || parts=(single arsgd asp)
read -r -a overlaps <<< "${ARSGD_OVERLAP:-none wfbp}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
source bench/lib.sh
col() { awk -v c="$2" '{print $c}' "$1" | median; }
# samples/s, ms per iteration of compute (forward + backward), of the update, the update's share of the step.
summary() {
  "$PYTHON" -c "import json; s = json.load(open('$1')); t = s['seconds_per_iteration']
step = sum(v for k, v in t.items() if isinstance(v, (int, float)))
print(s['samples_per_second'], 1000 * (t['forward'] + t['backward']), 1000 * t['update'], t['update'] / step)"
}
train() {  # binary tag flags...
  local bin=$1 tag=$2
  shift 2
  "$bin" train "$@" --dataset fashion-mnist --no-checkpoint --progress-seconds 1000 --out "$out/run" --overwrite \
    >/dev/null 2>"$out/err" || { cat "$out/err" >&2; exit 1; }
  summary "$out/run/summary.json" >> "$out/$tag"
}
row() {  # label file reference
  awk -v l="$1" -v s="$(col "$2" 1)" -v c="$(col "$2" 2)" -v u="$(col "$2" 3)" -v h="$(col "$2" 4)" -v r="$3" \
    'BEGIN { printf "%-24s %10.0f %8.2fx %12.2f %10.2f %8.1f%%\n", l, s, s / r, c, u, 100 * h }'
}
header() { printf '%-24s %10s %9s %12s %10s %9s\n' "$1" samples/s "$2" 'compute ms' 'update ms' 'update%'; }

for part in "${parts[@]}"; do
  case $part in
    single)
      for model in lenet5 mlp; do
        steps=$([ "$model" = mlp ] && echo 200 || echo 400)
        for _ in $(seq "$REPEATS"); do
          for b in before after; do
            bin=$([ $b = before ] && echo "$BEFORE" || echo "$BUILD/distsgd")
            train "$bin" "$model-$b" --model "$model" --batch-size 64 --threads 1 --max-steps "$steps"
          done
          "$PYTHON" bench/pytorch_peer.py --model "$model" --steps "$steps" --threads 1 |
            "$PYTHON" -c "import json,sys;print(json.load(sys.stdin)['samples_per_second'])" >> "$out/$model-pytorch"
        done
        p=$(median < "$out/$model-pytorch")
        echo "single process, $model, 1 thread, batch 64, $steps steps, median of $REPEATS"
        header "$model" vs_pytorch
        row "distsgd before" "$out/$model-before" "$p"
        row "distsgd fused kernels" "$out/$model-after" "$p"
        awk -v p="$p" 'BEGIN { printf "%-24s %10.0f %8.2fx\n", "pytorch 1.13", p, 1 }'
      done
      ;;
    arsgd)
      for _ in $(seq "$REPEATS"); do
        for v in "${overlaps[@]}"; do
          for b in before after; do
            bin=$([ $b = before ] && echo "$BEFORE" || echo "$BUILD/distsgd")
            train "$bin" "arsgd-$v-$b" --algo arsgd --workers 2 --overlap "$v" --model mlp --batch-size 64 \
              --threads 1 --max-steps 200
          done
        done
        "$PYTHON" bench/ddp_peer.py --model mlp --workers 2 --steps 200 --threads 1 |
          "$PYTHON" -c "import json, sys; print(json.load(sys.stdin)['samples_per_second'])" >> "$out/ddp"
      done
      d=$(median < "$out/ddp")
      echo "AR-SGD vs DDP, mlp, 2 workers x 1 thread, batch 64 per worker, 200 steps, median of $REPEATS"
      header mlp vs_ddp
      for v in "${overlaps[@]}"; do
        row "arsgd $v before" "$out/arsgd-$v-before" "$d"
        row "arsgd $v fused" "$out/arsgd-$v-after" "$d"
      done
      awk -v p="$d" 'BEGIN { printf "%-24s %10.0f %8.2fx\n", "ddp", p, 1 }'
      ;;
    asp)
      for _ in $(seq "$REPEATS"); do
        for b in before after; do
          bin=$([ $b = before ] && echo "$BEFORE" || echo "$BUILD/distsgd")
          train "$bin" "asp-$b" --algo asp --servers 1 --workers 4 --momentum 0 --model mlp --batch-size 32 \
            --epochs 1000 --time-budget "$BUDGET"
        done
      done
      before=$(col "$out/asp-before" 1)
      echo "ASP, mlp, 1 server, 4 workers, batch 32, --momentum 0, $BUDGET s each, median of $REPEATS"
      printf '%-24s %10s %12s %9s %10s %9s\n' mlp samples/s gradients/s vs_before 'update ms' 'update%'
      for b in before after; do
        awk -v l="asp $b" -v s="$(col "$out/asp-$b" 1)" -v r="$before" -v u="$(col "$out/asp-$b" 3)" \
          -v h="$(col "$out/asp-$b" 4)" \
          'BEGIN { printf "%-24s %10.0f %12.1f %8.2fx %10.2f %8.1f%%\n", l, s, s / 32, s / r, u, 100 * h }'
      done
      ;;
    *) echo "unknown part $part (single, arsgd, asp)" >&2; exit 1 ;;
  esac
done
