// `distsgd commbench --cluster-out FILE`: the fits of a commbench run as a cluster description that `distsgd simulate
// --cluster FILE` reads ("this host", or the emulated cluster measured over with --net). spec/simulator.md prefers
// measured fits to link presets: a collective's alpha holds software overhead the link figures lack.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "distsgd/cluster/cluster_plan.hpp"
#include "distsgd/comm/process_env.hpp"
#include "distsgd/core/linear_fit.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"

namespace distsgd::cli {

// What one commbench run fitted, t(m) = alpha + beta*m per primitive.
struct CommbenchFits {
  int64_t processes = 0;
  LinearFit allreduce;                 // allreduce_sum over every process
  std::optional<LinearFit> send_recv;  // rank 0 <-> rank 1, one way (absent with --no-send-recv)
  std::optional<LinearFit> incast;     // ranks 1..P-1 to rank 0 at once, each m (with --incast)
  // With --busy-delivery: the extra one-way time of a small message while every rank computes (quantiles).
  std::vector<sim::ClusterDescription::DelayQuantile> busy_delivery;
};

// Where the processes ran.
struct CommbenchLayout {
  int64_t workers_per_node = 1;               // processes on the fullest host
  bool pair_shares_a_node = false;            // ranks 0 and 1 on one host: send_recv measured the intra-node path
  double declared_node_bytes_per_second = 0;  // the emulated hosts' slowest shaped link (0: unshaped, loopback)
  std::string description;  // "this host over loopback", "emulated cluster --net 1gbit, 2 hosts, block placement"
  // The processes ran on this host's cores (loopback; the emulated hosts are namespaces of it), so the cluster's
  // ranks share them (shared_cores); false for hosts of their own (mpirun or srun across nodes).
  bool shares_this_hosts_cores = true;
  // A host's messages leave one after another (ClusterDescription::egress_queue kFifo): the emulated hosts' links
  // are shaped by tbf, whose queue does so, and on loopback the shared cores copy them out in turn.
  bool fifo_egress = false;
};

// This host: every process talks to the others over TCP on loopback (Gloo has no shared-memory path), so there is
// no faster path inside the host to describe, and each process is a node of its own.
CommbenchLayout loopback_layout();
// The emulated cluster's hosts (distsgd commbench --net): processes per host, whether ranks 0 and 1 share one.
CommbenchLayout emulated_layout(const cluster::ClusterPlan& plan, const std::string& net);
// Processes another launcher started (mpirun, srun, torchrun) on hosts of their own: `local_world_size` on rank 0's
// host (the launcher's local size) of `world_size`. Each rank is then taken to have its own cores, as on a cluster;
// call it only when the ranks are not all on this host (local_world_size < world_size), which is loopback_layout.
CommbenchLayout launched_layout(int64_t world_size, int64_t local_world_size, const std::string& launcher);

// Where a commbench run's `processes` ran: on the emulated cluster it asked for (--net), on this host (distsgd's own
// launcher, or another whose local size is the whole run), or on hosts of their own (launched_layout).
CommbenchLayout layout_of(const comm::ProcessEnv& env, const cluster::NetworkRequest& network, int64_t processes);

// Throws Error when the fits cannot describe a cluster (an allreduce line that does not rise with the size).
sim::ClusterDescription cluster_from_commbench(const CommbenchFits& fits, const CommbenchLayout& layout);

}  // namespace distsgd::cli
