#!/usr/bin/env bash
# One short session on a cluster, under mpirun: measure a few algorithms at a small worker count, calibrate the
# simulator on those runs, predict a larger count, then measure it and print predicted against measured (README,
# "Calibrating for your cluster"). On a cluster, name the hosts and the base; alone it runs on this host.
#
# Usage: bench/cluster_session.sh
#   env HOSTS       mpirun's -H list, e.g. node01:2,node02:2 (default: this host alone)
#       MASTER_ADDR the store's host (default 127.0.0.1; on a cluster: the first host)
#       MPIRUN_ARGS more arguments for every mpirun (e.g. "-x GLOO_SOCKET_IFNAME --mca plm_rsh_agent ...")
#       SHARED_CORES  with HOSTS: the hosts' ranks share this many cores (nodes emulated on one machine,
#                   scripts/emulated_nodes.sh); default: each rank has cores of its own, as on a cluster
#       BASE        the calibration's base cluster: a preset or JSON (default: measured by commbench; on this host,
#                   loopback with its busy receivers' delay and the host's cores shared; on a cluster, between the
#                   first two hosts, with the first host's slots as the workers per node)
#       SMALL=2 CHECK=4   workers of the calibration runs and of the checked prediction
#       PREDICT=8,16,64   further worker counts to predict (not measured)
#       ALGOS="arsgd bsp asp easgd gosgd gossip sgp adpsgd"  STEPS=300  OUT=/tmp/cluster-session  BUILD=build
#       MODEL_FLAGS="--model lenet5 --dataset fashion-mnist --batch-size 32"
#       THREADS=1   compute threads of every process, the profile's and the runs' alike (the profile must time the
#                   compute the runs do; a process alone on a host would otherwise take all its cores)
#       COMMBENCH_MB=16 COMMBENCH_REPEATS=50   with HOSTS: commbench's largest message and its repeats per size
# Every run directory, the profile, the calibrated cluster and session.csv stay in OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
HOSTS=${HOSTS:-}
SMALL=${SMALL:-2}
CHECK=${CHECK:-4}
PREDICT=${PREDICT:-8,16,64}
ALGOS=${ALGOS:-arsgd bsp asp easgd gosgd gossip sgp adpsgd}
STEPS=${STEPS:-300}
OUT=${OUT:-/tmp/cluster-session}
MODEL_FLAGS=${MODEL_FLAGS:---model lenet5 --dataset fashion-mnist --batch-size 32}
THREADS=${THREADS:-1}
COMMBENCH_MB=${COMMBENCH_MB:-16}
COMMBENCH_REPEATS=${COMMBENCH_REPEATS:-50}
read -r -a mpirun_args <<<"${MPIRUN_ARGS:-}"
SHARED_CORES=${SHARED_CORES:-}
export MASTER_ADDR=${MASTER_ADDR:-127.0.0.1} MASTER_PORT=${MASTER_PORT:-29731}
distsgd=$(realpath "$BUILD/distsgd")
mkdir -p "$OUT/runs"

servers_of() { case $1 in bsp | asp | ssp | easgd | aladdin) echo 1 ;; *) echo 0 ;; esac; }

# One training run under mpirun: the algorithm's workers and servers as processes; the run's samples/s on stdout.
run() {
  local algo=$1 workers=$2 dir="$OUT/runs/$1-w$2"
  local servers processes
  servers=$(servers_of "$algo")
  processes=$((workers + servers))
  if [[ ! -f $dir/summary.json ]]; then
    local hosts=()
    [[ -n $HOSTS ]] && hosts=(-H "$HOSTS")
    # shellcheck disable=SC2086
    # --bind-to none: distsgd sets its own threads (THREADS); Open MPI would bind each rank to one core when it
    # starts two processes or fewer (on emulated nodes, every node's first rank to the machine's core 0).
    mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$processes" "${hosts[@]}" -x MASTER_ADDR -x MASTER_PORT \
      "${mpirun_args[@]}" \
      "$distsgd" train --algo "$algo" --workers "$workers" --servers "$servers" $MODEL_FLAGS --threads "$THREADS" \
      --max-steps "$STEPS" --epochs 1 --no-checkpoint --progress-seconds 1000 --overwrite --out "$dir" \
      >"$dir.log" 2>&1 || {
      echo "cluster_session: $algo at $workers workers failed; see $dir.log" >&2
      exit 1
    }
  fi
  python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["samples_per_second"]))' "$dir/summary.json"
}

echo "1. profile of the model (one process; on a cluster, on one of its nodes)"
# shellcheck disable=SC2086
[[ -f $OUT/profile.json ]] || "$distsgd" profile $MODEL_FLAGS --threads "$THREADS" --out "$OUT/profile.json" >/dev/null

base=${BASE:-}
if [[ -z $base ]]; then
  if [[ -n $HOSTS ]]; then
    # Measured, not guessed: commbench between the first two hosts (one process each) gives the network's alpha,
    # rate and allreduce; the hosts' first slot count is the workers per node (the calibration scales the links).
    IFS=, read -r -a entries <<<"$HOSTS"
    first=${entries[0]%%:*} second=${entries[1]:-${entries[0]}}
    second=${second%%:*}
    echo "   the base: commbench between $first and $second under mpirun"
    base=$OUT/base.json
    if [[ ! -f $base ]]; then
      mpirun --allow-run-as-root --bind-to none -np 2 -H "$first,$second" -x MASTER_ADDR -x MASTER_PORT "${mpirun_args[@]}" \
        "$distsgd" commbench --max-mb "$COMMBENCH_MB" --repeats "$COMMBENCH_REPEATS" --cluster-out "$base" >"$OUT/commbench.log" 2>&1 || {
        echo "cluster_session: commbench failed; see $OUT/commbench.log (or give BASE=PRESET|FILE)" >&2
        exit 1
      }
      slots=${entries[0]#*:}
      [[ $slots == "${entries[0]}" ]] && slots=1
      python3 - "$base" "$slots" "$SHARED_CORES" <<'EOF'
import json, sys
cluster = json.load(open(sys.argv[1]))
cluster["workers_per_node"] = int(sys.argv[2])
if sys.argv[3]:  # else commbench's reading: a core per rank on hosts of their own
    cluster["shared_cores"] = int(sys.argv[3])
json.dump(cluster, open(sys.argv[1], "w"), indent=2)
EOF
    fi
  else
    echo "   the base: commbench on this host's loopback, $SMALL processes, with the busy receivers' delay and the"
    echo "   hand-over per collective step at $CHECK"
    base=$OUT/base.json
    if [[ ! -f $base ]]; then
      handover=()
      if [[ $CHECK != "$SMALL" ]]; then
        # An allreduce at CHECK processes: what a ring step costs more with more ranks on these cores.
        "$distsgd" commbench --processes "$CHECK" --max-mb 4 --no-send-recv --cluster-out "$OUT/commbench-$CHECK.json" \
          >"$OUT/commbench-$CHECK.log" 2>&1
        handover=(--handover-from "$OUT/commbench-$CHECK.json")
      fi
      "$distsgd" commbench --processes "$SMALL" --max-mb 4 --busy-delivery --incast --cluster-out "$base" \
        "${handover[@]}" >"$OUT/commbench.log" 2>&1
      # Every rank shares this host's cores, as the runs here do (a cluster gives each rank its own).
      python3 - "$base" "$(nproc)" <<'EOF'
import json, sys
cluster = json.load(open(sys.argv[1]))
cluster["shared_cores"] = int(sys.argv[2])
json.dump(cluster, open(sys.argv[1], "w"), indent=2)
EOF
    fi
  fi
fi

echo "2. the calibration runs: ${ALGOS// /, } at $SMALL workers, $STEPS steps each, under mpirun"
small_runs=()
for algo in $ALGOS; do
  printf '   %-8s %8s samples/s\n' "$algo" "$(run "$algo" "$SMALL")"
  small_runs+=("$OUT/runs/$algo-w$SMALL")
done

echo "3. calibrate on them"
"$distsgd" calibrate --runs "${small_runs[@]}" --profile "$OUT/profile.json" --cluster "$base" \
  --out "$OUT/cluster.json" | sed 's/^/   /'

echo "4. predict $CHECK and $PREDICT workers, then measure $CHECK under mpirun"
echo "algorithm,workers,predicted,measured,error_percent" >"$OUT/session.csv"
where=""
[[ -z $HOSTS && -z ${BASE:-} ]] && where=" (sharing this host's $(nproc) cores, as the runs here do)"
[[ -n $HOSTS && -n $SHARED_CORES ]] && where=" (the hosts sharing $SHARED_CORES cores, as the runs here do)"
printf '   %-8s %9s %9s %8s   predicted at %s%s\n' algorithm predicted measured error "$PREDICT" "$where"
for algo in $ALGOS; do
  "$distsgd" simulate --profile "$OUT/profile.json" --cluster "$OUT/cluster.json" --algo "$algo" \
    --servers "$(servers_of "$algo" | sed 's/^0$/1/')" --workers "$CHECK,$PREDICT" --out "$OUT/predicted-$algo.json" \
    >/dev/null
  read -r predicted further < <(python3 -c '
import json, sys
rates = [round(p["samples_per_second"]) for p in json.load(open(sys.argv[1]))["predictions"]]
print(rates[0], "/".join(map(str, rates[1:])))' "$OUT/predicted-$algo.json")
  measured=$(run "$algo" "$CHECK")
  error=$(python3 -c "print(f'{100 * ($predicted - $measured) / $measured:+.1f}')")
  echo "$algo,$CHECK,$predicted,$measured,$error" >>"$OUT/session.csv"
  printf '   %-8s %9s %9s %7s%%   %s\n' "$algo" "$predicted" "$measured" "$error" "$further"
done
python3 - "$OUT/session.csv" <<'EOF'
import csv, itertools, sys
rows = list(csv.DictReader(open(sys.argv[1])))
mape = sum(abs(float(r["error_percent"])) for r in rows) / len(rows)
pairs = [(float(a["predicted"]) - float(b["predicted"])) * (float(a["measured"]) - float(b["measured"]))
         for a, b in itertools.combinations(rows, 2)]
tau = (sum(p > 0 for p in pairs) - sum(p < 0 for p in pairs)) / len(pairs)  # tau-a: a tie counts as neither
fastest = lambda key: max(rows, key=lambda r: float(r[key]))["algorithm"]
print(f"   MAPE {mape:.1f}%, Kendall's tau {tau:.2f}, fastest measured {fastest('measured')}, "
      f"predicted {fastest('predicted')}")
EOF
echo "wrote $OUT/session.csv, $OUT/cluster.json and the runs under $OUT/runs"
