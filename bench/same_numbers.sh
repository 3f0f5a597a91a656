#!/usr/bin/env bash
# Refactoring guard: runs the deterministic configurations (single-process SGD, AR-SGD with every overlap, BSP on
# one and two shards, BSP with DGC) with two distsgd binaries and compares test accuracy and test loss exactly.
# Same seed, same numbers, or the refactoring changed behaviour.
# Usage: bench/same_numbers.sh OLD_BINARY NEW_BINARY   env: STEPS (default 60)
set -euo pipefail
old=$1
new=$2
STEPS=${STEPS:-60}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
runs=(
  "sgd|--algo sgd --workers 1"
  "arsgd none|--algo arsgd --workers 2 --overlap none"
  "arsgd wfbp|--algo arsgd --workers 2 --overlap wfbp"
  "arsgd multistep|--algo arsgd --workers 2 --overlap multistep"
  "bsp 1 server|--algo bsp --workers 2 --servers 1"
  "bsp 2 servers layer|--algo bsp --workers 2 --servers 2 --sharding layer"
  "bsp dgc|--algo bsp --workers 2 --servers 1 --compress dgc --density 0.01"
  "arsgd dgc|--algo arsgd --workers 2 --compress dgc --density 0.01"
)
differ=0
printf '%-22s %-28s %-28s %s\n' run "old accuracy / loss" "new accuracy / loss" same
for entry in "${runs[@]}"; do
  name=${entry%%|*}
  flags=${entry#*|}
  for which in old new; do
    bin=${!which}
    # shellcheck disable=SC2086
    "$bin" train $flags --model lenet5 --dataset fashion-mnist --batch-size 32 --max-steps "$STEPS" --seed 3 \
      --threads 1 --no-checkpoint --progress-seconds 1000 --out "$out/$which" --overwrite >/dev/null 2>"$out/err" ||
      { cat "$out/err"; exit 1; }
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(repr(s["test_accuracy"]), repr(s["test_loss"]))' \
      "$out/$which/summary.json" > "$out/$which.txt"
  done
  same=yes
  cmp -s "$out/old.txt" "$out/new.txt" || { same=NO; differ=1; }
  printf '%-22s %-28s %-28s %s\n' "$name" "$(cat "$out/old.txt")" "$(cat "$out/new.txt")" "$same"
done
exit $differ
