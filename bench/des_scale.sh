#!/usr/bin/env bash
# The discrete-event simulator's speed (issue 11's target: 1,000 workers x 100 iterations of BSP or AD-PSGD in under
# a second on one core, Release build). Times `distsgd simulate --fidelity des` on an analytical ResNet-50 profile
# (161 tensors, 25.6 M parameters; `distsgd profile --device`, nothing measured) over the 10gbe preset, pinned to one
# core, for each algorithm: the simulator's own wall time (as simulate prints it), and the whole command's wall and
# user CPU time (process start-up included; on a loaded machine the CPU time is the figure to compare).
# Usage: bench/des_scale.sh [WORKERS] [ITERATIONS] [ALGO...]   (env BUILD, default build; defaults 1000, 100, bsp adpsgd)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
workers=${1:-1000}
iterations=${2:-100}
shift $(($# > 2 ? 2 : $#))
algorithms=("$@")
[ ${#algorithms[@]} -gt 0 ] || algorithms=(bsp adpsgd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$BUILD/distsgd" profile --model resnet50 --device v100-pcie --batch-size 64 --out "$out/p.json" >/dev/null
pin=()
command -v taskset >/dev/null && pin=(taskset -c 0)
printf '%-8s %8s %10s %12s %14s %12s %12s\n' algo workers iterations events simulation_s command_s command_cpu_s
for algo in "${algorithms[@]}"; do
  /usr/bin/time -f '%e %U' -o "$out/time" "${pin[@]}" "$BUILD/distsgd" simulate --profile "$out/p.json" --cluster 10gbe \
    --fidelity des --algo "$algo" --workers "$workers" --iterations "$iterations" --warmup 0 >"$out/table"
  line=$(grep -E '^ +simulated ' "$out/table")  # "simulated S s (N events) in W s"
  events=$(sed -E 's/.*\(([0-9]+) events\).*/\1/' <<<"$line")
  seconds=$(sed -E 's/.* in ([0-9.]+) s$/\1/' <<<"$line")
  read -r wall cpu <"$out/time"
  printf '%-8s %8d %10d %12d %14.3f %12.2f %12.2f\n' "$algo" "$workers" "$iterations" "$events" "$seconds" "$wall" "$cpu"
done
