#!/usr/bin/env bash
# bench/cluster_session.sh's path for a cluster, run for real on three nodes emulated here (scripts/emulated_nodes.sh:
# network namespaces with their own addresses and host names, joined by 100 Mbit/s links): mpirun starts the ranks
# on the nodes through their rsh agent, commbench between two nodes gives the base, two algorithms are calibrated at
# 2 workers and checked at 3. Asserts that the traffic crossed the emulated links (the base holds their rate, not
# loopback's; the third node's link carried the 3-worker runs), that the base says whose cores the ranks share, and
# that session.csv has a prediction and a measurement per algorithm. No bound on the prediction's error: it depends
# on the host's load. Skips (status 77), saying why, without root, ip netns or mpirun.
# Usage: tests/cluster_session_test.sh DISTSGD_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
binary=$1
source=$2
work=$3

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for network namespaces (CI runs as root)"; exit 77; }
command -v mpirun > /dev/null || { echo "SKIP: mpirun is not installed (scripts/setup.sh installs openmpi-bin)"; exit 77; }
command -v ip > /dev/null || { echo "SKIP: ip is not installed (scripts/setup.sh installs iproute2)"; exit 77; }
unshare --net true 2> /dev/null || { echo "SKIP: this root may not make network namespaces"; exit 77; }

prefix=dsgdtest$$
nodes=$source/scripts/emulated_nodes.sh
rm -rf "$work"
mkdir -p "$work"
trap '"$nodes" down "$prefix"' EXIT
"$nodes" up "$prefix" 3 100mbit || { echo "FAIL: scripts/emulated_nodes.sh up"; exit 1; }

export BUILD
BUILD=$(dirname "$binary")
export HOSTS=10.89.0.1:1,10.89.0.2:1,10.89.0.3:1 MASTER_ADDR=10.89.0.1 MASTER_PORT=29731 GLOO_SOCKET_IFNAME=eth0
export MPIRUN_ARGS="-x GLOO_SOCKET_IFNAME --mca plm_rsh_agent $nodes"
export SHARED_CORES=2 SMALL=2 CHECK=3 PREDICT=8 ALGOS="arsgd gossip" STEPS=100 COMMBENCH_MB=1 COMMBENCH_REPEATS=20 OUT=$work/session
"$nodes" run "$prefix" 1 "$source/bench/cluster_session.sh" | tee "$work/session.log"

fail() {
  echo "FAIL: $*"
  exit 1
}
python3 - "$work/session/base.json" <<'EOF' || fail "the base from commbench under mpirun (above)"
import json, sys
base = json.load(open(sys.argv[1]))
print("base:", base["source"], "| shared_cores", base["shared_cores"], "| link", base["worker_bytes_per_second"], "B/s")
assert "started by mpirun" in base["source"], base["source"]
assert base["shared_cores"] == 2, "SHARED_CORES=2 must reach the base"
# 100 Mbit/s is 12.5 MB/s; loopback would be GB/s. The shaper's bucket lets small messages through faster, so the
# fit comes out somewhat above the rate.
assert 5e6 < base["worker_bytes_per_second"] < 25e6, base["worker_bytes_per_second"]
EOF
python3 - "$work/session/session.csv" <<'EOF' || fail "session.csv"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["algorithm"] for r in rows] == ["arsgd", "gossip"], rows
for r in rows:
    assert r["workers"] == "3" and float(r["predicted"]) > 0 and float(r["measured"]) > 0, r
EOF
# The third node runs a rank only in the 3-worker runs: its link must have carried their gradients or models
# (lenet5's 61,706 floats, 247 KB, on most of 100 steps).
sent=$(ip netns exec "$prefix-3" cat /sys/class/net/eth0/statistics/tx_bytes)
echo "node 3 sent $sent bytes"
[ "$sent" -gt 10000000 ] || fail "node 3's link carried $sent bytes: its ranks did not train across the emulated network"
grep -q "MAPE" "$work/session.log" || fail "no summary line"
echo "PASS"
