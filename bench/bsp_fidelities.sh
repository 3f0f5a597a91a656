#!/usr/bin/env bash
# BSP pushing during backward (--overlap wfbp, the default): the analytical model's iteration time over the
# discrete-event simulator's, for every worker count and server count of three kinds of cluster (servers behind links
# of their own with one or four workers a node, servers on the workers' nodes), with every worker pushing and with
# local aggregation. Nothing measured here; about 5 minutes on 2 cores. bench/README.md, "The rounds' flows shared
# max-min fairly in the analytical BSP".
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$BUILD/distsgd" profile --model resnet50 --device v100-pcie --batch-size 32 --out "$out/v100.json" >/dev/null
"$BUILD/distsgd" profile --model resnet50 --device k80 --batch-size 64 --out "$out/k80.json" >/dev/null

iteration_seconds() {  # PROFILE CLUSTER WORKERS SERVERS FIDELITY [FLAGS...]
  local profile=$1 cluster=$2 workers=$3 servers=$4 fidelity=$5
  shift 5
  "$BUILD/distsgd" simulate --profile "$profile" --cluster "$cluster" --algo bsp --servers "$servers" \
    --workers "$workers" --fidelity "$fidelity" "$@" --out "$out/s.json" >/dev/null
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["predictions"][0]["iteration_seconds"])' "$out/s.json"
}

printf '%-16s %-18s %-11s %s\n' cluster pushers "min-max" "analytical / des per (workers, servers)"
for spec in "10gbe v100 4,8,16,32 1,2,4" "100gb-ib v100 4,8,16,32 1,2,4" "hkbu-v100-10gbe v100 4,8,16,32 1,2,4" \
  "aws-p2-8xlarge k80 8,16,32,64 1,2,4,8"; do
  read -r cluster device worker_counts server_counts <<<"$spec"
  for aggregation in none host; do
    ratios=()
    for workers in ${worker_counts//,/ }; do
      for servers in ${server_counts//,/ }; do
        ((servers > workers)) && continue
        flags=(--local-aggregation "$aggregation")
        analytical=$(iteration_seconds "$out/$device.json" "$cluster" "$workers" "$servers" analytical "${flags[@]}")
        des=$(iteration_seconds "$out/$device.json" "$cluster" "$workers" "$servers" des "${flags[@]}")
        ratios+=("$workers,$servers:$(python3 -c "print(f'{$analytical / $des:.3f}')")")
      done
    done
    printf '%s\n' "${ratios[@]}" | awk -F: -v c="$cluster" -v a="$aggregation" \
      '{ r[NR] = $2; l = l " " $0; if (NR == 1 || $2 < lo) lo = $2; if (NR == 1 || $2 > hi) hi = $2 }
       END { printf "%-16s %-18s %s-%s %s\n", c, (a == "host" ? "local aggregation" : "every worker"), lo, hi, l }'
  done
done
