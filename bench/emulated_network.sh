#!/usr/bin/env bash
# The IPDPS question on an emulated cluster: how the algorithms' throughput changes as the links narrow. 4 workers,
# every rank on its own emulated host (--net), lenet5 and mlp (784-1024-1024-10, 1.9M parameters) on Fashion-MNIST,
# batch 32 per worker, each run training for a fixed wall-time window (--time-budget). For each network (unshaped,
# 1gbit, 100mbit) prints samples/s, the ratio to AR-SGD on the same network, and the busiest link's utilisation
# (bytes over rate x training time, the larger of its two directions; for PS algorithms that is a server's link).
# Needs root (or user namespaces). Usage: bench/emulated_network.sh [models...]  (default: lenet5 mlp)
# env: BUILD (default build), BUDGET (seconds per run, default 15), NETS (default "unshaped 1gbit 100mbit"),
#      CSV (a file to write every row to, as well)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BUDGET=${BUDGET:-15}
read -r -a nets <<< "${NETS:-unshaped 1gbit 100mbit}"
models=("$@")
[ $# -gt 0 ] || models=(lenet5 mlp)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# The recipes of bench/async_ps.sh: ASP and SSP without momentum, which diverge with it.
algos=(
  "arsgd|--algo arsgd"
  "bsp S=1|--algo bsp --servers 1"
  "bsp S=4|--algo bsp --servers 4"
  "asp S=1|--algo asp --servers 1 --momentum 0"
  "asp S=4|--algo asp --servers 4 --momentum 0"
  "ssp S=1|--algo ssp --servers 1 --staleness 3 --momentum 0"
  "ssp S=4|--algo ssp --servers 4 --staleness 3 --momentum 0"
  "easgd|--algo easgd --servers 1 --tau 2"
  "aladdin|--algo aladdin --servers 1 --pi 4"
  "adpsgd|--algo adpsgd"
  "sgp|--algo sgp --sgp-overlap 1"
)

# Prints "samples/s utilisation" of one run.
measure() {
  local flags=$1 net=$2 dir=$out/run
  # shellcheck disable=SC2086
  "$BUILD/distsgd" train $flags --workers 4 --model "$model" --mlp-width 1024 --dataset fashion-mnist \
    --batch-size 32 --epochs 1000 --time-budget "$BUDGET" --no-checkpoint --progress-seconds 1000 --threads 1 \
    --net "$net" --out "$dir" --overwrite > "$out/log" 2>&1 || { cat "$out/log" >&2; exit 1; }
  python3 -c "
import json
s = json.load(open('$dir/summary.json'))
u = [max(l['training_utilisation_sent'] or 0, l['training_utilisation_received'] or 0) for l in s['network']['links']]
print(s['samples_per_second'], max(u) if '$net' != 'unshaped' else float('nan'))"
}

[ -z "${CSV:-}" ] || echo "model,network,algorithm,samples_per_second,ratio_to_arsgd,busiest_link_utilisation" > "$CSV"
printf '%-7s %-9s %-9s %10s %9s %12s\n' model network algorithm samples/s 'vs arsgd' 'busiest link'
for model in "${models[@]}"; do
  for net in "${nets[@]}"; do
    base=
    for entry in "${algos[@]}"; do
      name=${entry%%|*}
      read -r rate util <<< "$(measure "${entry#*|}" "$net")"
      [ -n "$base" ] || base=$rate
      line=$(awk -v m="$model" -v n="$net" -v a="$name" -v r="$rate" -v b="$base" -v u="$util" \
        'BEGIN { printf "%-7s %-9s %-9s %10.0f %8.2fx %11s\n", m, n, a, r, r / b, (u == "nan" ? "-" : sprintf("%.0f%%", 100 * u)) }')
      echo "$line"
      [ -z "${CSV:-}" ] || awk -v m="$model" -v n="$net" -v a="$name" -v r="$rate" -v b="$base" -v u="$util" \
        'BEGIN { printf "%s,%s,%s,%.1f,%.3f,%s\n", m, n, a, r, r / b, u }' >> "$CSV"
    done
  done
done
