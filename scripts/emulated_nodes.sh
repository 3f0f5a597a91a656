#!/usr/bin/env bash
# Nodes for mpirun on one machine: N network namespaces, each with its own address and a shaped link to a switch, so
# that a script meant for a cluster (bench/cluster_session.sh) runs its multi-host path here: mpirun starts ranks on
# other "hosts" through an rsh agent that enters their namespace (where a cluster would ssh), the ranks rendezvous at
# node 1's address and talk TCP through the switch. Unlike `distsgd train --net`, whose namespaces live and die with
# one run, these are named (ip netns) and outlive the commands run in them, so `down` (or the caller's trap) must
# remove them. The nodes share this machine's cores, which a real cluster's nodes do not.
#
# Usage: scripts/emulated_nodes.sh up PREFIX NODES RATE   (RATE as tc(8): 1gbit, 100mbit; "unshaped": no shaping)
#        scripts/emulated_nodes.sh down PREFIX
#        scripts/emulated_nodes.sh run PREFIX NODE COMMAND...   (a command on node NODE, 1-based: mpirun on node 1)
#        scripts/emulated_nodes.sh HOST COMMAND...          (the rsh agent, as mpirun calls it: HOST a node's address)
# Node i has the address 10.89.0.i on its eth0 and the namespace PREFIX-i; the switch is PREFIX-switch. Needs root.
# Under mpirun (started by `run PREFIX 1`): --mca plm_rsh_agent /path/to/scripts/emulated_nodes.sh,
# -x GLOO_SOCKET_IFNAME=eth0, MASTER_ADDR=10.89.0.1, and -H with the nodes' addresses (10.89.0.1:1,10.89.0.2:1,...).
set -euo pipefail

subnet=10.89.0

# A bucket of 1 ms at the rate (at least three frames) and 50 ms of queue (at least 1 MiB), as the emulated cluster
# of `distsgd train --net` shapes its links (src/distsgd/cluster/emulated_cluster.cpp).
shape() {
  local namespace=$1 device=$2 rate=$3
  [[ $rate == unshaped ]] && return
  local bits
  bits=$(tc_bits "$rate")
  local burst=$((bits / 8 / 1000)) limit
  ((burst < 3 * 1514)) && burst=$((3 * 1514))
  limit=$((bits / 8 / 20))
  ((limit < 1048576)) && limit=1048576
  ip netns exec "$namespace" tc qdisc replace dev "$device" root tbf rate "$rate" burst "$burst" limit $((burst + limit))
}

# tc's rate in bits/s: 1gbit, 100mbit, 10kbit (decimal, whole numbers).
tc_bits() {
  local rate=$1
  [[ $rate =~ ^[1-9][0-9]*[gmk]bit$ ]] || rate=bad
  case $rate in
    *gbit) echo $((${rate%gbit} * 1000000000)) ;;
    *mbit) echo $((${rate%mbit} * 1000000)) ;;
    *kbit) echo $((${rate%kbit} * 1000)) ;;
    *) echo "emulated_nodes: rate '$1': give a whole number of gbit, mbit or kbit (1gbit, 100mbit), or unshaped" >&2 && exit 2 ;;
  esac
}

up() {
  local prefix=$1 nodes=$2 rate=$3
  [[ $nodes =~ ^[0-9]+$ && $nodes -ge 2 && $nodes -le 200 ]] || {
    echo "emulated_nodes: NODES must be 2 to 200, got '$nodes'" >&2
    exit 2
  }
  [[ $rate == unshaped ]] || tc_bits "$rate" >/dev/null
  ip netns add "$prefix-switch"
  ip -n "$prefix-switch" link add br0 type bridge
  ip -n "$prefix-switch" link set br0 up
  for i in $(seq 1 "$nodes"); do
    local node=$prefix-$i
    ip netns add "$node"
    ip -n "$prefix-switch" link add "p$i" type veth peer name eth0 netns "$node"
    ip -n "$prefix-switch" link set "p$i" master br0 up
    ip -n "$node" addr add "$subnet.$i/24" dev eth0
    ip -n "$node" link set eth0 up
    ip -n "$node" link set lo up
    shape "$node" eth0 "$rate"             # the node's uplink
    shape "$prefix-switch" "p$i" "$rate"   # its downlink
  done
}

down() {
  local prefix=$1 namespace
  for namespace in $(ip netns list | awk '{print $1}'); do
    [[ $namespace == "$prefix"-* ]] && ip netns delete "$namespace"
  done
  rm -rf "/tmp/$prefix"-*
  return 0
}

# The rsh agent: mpirun calls it as `AGENT HOST COMMAND...` for every other host, as it would call ssh. The node of
# an address 10.89.0.i is the namespace PREFIX-i, PREFIX from the environment mpirun was started in (exported by run).
rsh() {
  local host=$1
  shift
  [[ $host == "$subnet".* ]] || {
    echo "emulated_nodes rsh: '$host' is not an emulated node's address ($subnet.N)" >&2
    exit 2
  }
  enter "$DISTSGD_EMULATED_NODES" "${host##*.}" /bin/sh -c "$*"
}

# Runs a command as on node i: in its network namespace, under the host name PREFIX-i (a UTS namespace of its own)
# and with Open MPI's session files in a directory of its own. Open MPI names its session directory by the host
# name, so daemons of "hosts" that share one name and one /tmp remove each other's files (failed launches: "mkdir
# ... No such file or directory", PMIx errors, a segfault in hwloc's shared topology, about 1 launch in 10).
enter() {
  local prefix=$1 node=$2
  shift 2
  mkdir -p "/tmp/$prefix-$node"
  export OMPI_MCA_orte_tmpdir_base=/tmp/$prefix-$node DISTSGD_EMULATED_NODES=$prefix
  # shellcheck disable=SC2016 # the inner shell expands them
  exec ip netns exec "$prefix-$node" unshare --uts /bin/sh -c 'hostname "$0" && exec "$@"' "$prefix-$node" "$@"
}

case ${1:-} in
  up) up "${2:?PREFIX}" "${3:?NODES}" "${4:?RATE}" ;;
  down) down "${2:?PREFIX}" ;;
  run)
    prefix=${2:?PREFIX} node=${3:?NODE}
    shift 3
    enter "$prefix" "$node" "$@"
    ;;
  "$subnet".*) rsh "$@" ;;
  *)
    sed -n '2,15p' "$0" >&2
    exit 2
    ;;
esac
