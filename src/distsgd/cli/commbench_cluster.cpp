#include "distsgd/cli/commbench_cluster.hpp"

#include <algorithm>
#include <thread>

#include "distsgd/core/enum_names.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/host_cores.hpp"

namespace distsgd::cli {

CommbenchLayout loopback_layout() {
  CommbenchLayout layout{1, false, 0, "this host over loopback"};
  // The ranks share this host's cores, and a message leaves as a core copies it: a BSP server's replies to 8
  // workers on 2 cores reach them one after another, over 11 ms a round (gaps of 0.3-2.5 ms; bench/README, session
  // 41), as a FIFO queue sends them, not all at once as a fairly shared link would.
  layout.fifo_egress = true;
  return layout;
}

CommbenchLayout emulated_layout(const cluster::ClusterPlan& plan, const std::string& net) {
  CommbenchLayout layout;
  for (const auto& host : plan.hosts) {
    layout.workers_per_node = std::max<int64_t>(layout.workers_per_node, static_cast<int64_t>(host.ranks.size()));
    const double rate = host.link.rate_bytes_per_second();
    if (rate > 0 && (layout.declared_node_bytes_per_second == 0 || rate < layout.declared_node_bytes_per_second)) {
      layout.declared_node_bytes_per_second = rate;
    }
  }
  layout.pair_shares_a_node = plan.host_of_rank.size() >= 2 && plan.host_of_rank[0] == plan.host_of_rank[1];
  layout.fifo_egress = layout.declared_node_bytes_per_second > 0;
  layout.description = "emulated cluster --net " + net + ", " + std::to_string(plan.hosts.size()) + " hosts, " +
                       name_of(plan.placement) + " placement";
  return layout;
}

CommbenchLayout launched_layout(int64_t world_size, int64_t local_world_size, const std::string& launcher) {
  CommbenchLayout layout;
  layout.workers_per_node = std::max<int64_t>(1, local_world_size);
  // Which ranks share a host beside rank 0's depends on the launcher's mapping: the ping-pong between ranks 0 and
  // 1 is read as the link between nodes (run commbench with one process per host, as bench/cluster_session.sh does).
  layout.description = std::to_string(world_size) + " processes started by " + launcher + ", " +
                       std::to_string(layout.workers_per_node) + " on rank 0's host";
  layout.shares_this_hosts_cores = false;
  return layout;
}

CommbenchLayout layout_of(const comm::ProcessEnv& env, const cluster::NetworkRequest& network, int64_t processes) {
  if (cluster::network_requested(network)) {
    return emulated_layout(cluster::plan_cluster(network, processes, 0), network.net);
  }
  const bool one_host = env.launcher == "distsgd" || env.local_world_size >= env.world_size;
  return one_host ? loopback_layout() : launched_layout(env.world_size, env.local_world_size, env.launcher);
}

// Which fit feeds which field, and why:
// - allreduce_fit: the allreduce fit itself. AR-SGD's ring is the one prediction that needs it; it holds Gloo's
//   per-collective overhead and the reduction, and ClusterDescription::allreduce_cost inverts the ring formula at
//   the measured P, so other worker counts scale as a ring does. gamma stays 0 (the fit already holds it).
// - alpha_seconds, worker_bytes_per_second: the send/recv ping-pong, one sender on its link, which is what a
//   parameter-server push or pull, a gossip exchange and an alltoall slice are. Without it (--no-send-recv, or a
//   line that noise tilted flat on a fast loopback), one step of the measured ring, a point-to-point transfer too.
//   With ranks 0 and 1 on one emulated host the ping-pong measured the path inside the host: it feeds the
//   intra-node fields, and the node link is the emulated link as declared (the emulation enforces that rate).
// - server_bytes_per_second: the incast (P-1 senders into rank 0 at once, --incast): rank 0's inbound rate is
//   (P-1)/beta, a lower bound of a server's when the senders' own hosts are the slower side. Without it, a server's
//   link is a node's.
sim::ClusterDescription cluster_from_commbench(const CommbenchFits& fits, const CommbenchLayout& layout) {
  const int64_t p = fits.processes;
  require(p >= 2, "commbench --cluster-out needs at least 2 processes");
  require(fits.allreduce.beta > 0,
          "commbench --cluster-out: the allreduce times did not rise with the message size "
          "(beta " +
              std::to_string(fits.allreduce.beta) +
              " s/byte), so they describe no link: rerun with a larger --max-mb or more "
              "--repeats on a quieter machine");
  sim::ClusterDescription c;
  c.name = "commbench";
  c.source =
      "distsgd commbench fits (each size's fastest repeat), " + std::to_string(p) + " processes, " + layout.description;
  c.workers_per_node = layout.workers_per_node;
  if (layout.fifo_egress) c.egress_queue = sim::ClusterDescription::EgressQueue::kFifo;
  // The processes measured here share this host's cores (the emulated hosts too: they are namespaces of it); on
  // hosts of their own, each rank has its own (0).
  const auto cores = host_cores();
  c.shared_cores = layout.shares_this_hosts_cores ? cores : 0;
  c.allreduce_fit = {p, std::max(0.0, fits.allreduce.alpha), fits.allreduce.beta};
  c.busy_delivery = fits.busy_delivery;
  if (!c.busy_delivery.empty()) c.busy_delivery_cores = cores;

  double alpha = 0, rate = 0;
  if (fits.send_recv && fits.send_recv->beta > 0) {
    alpha = std::max(0.0, fits.send_recv->alpha);
    rate = 1.0 / fits.send_recv->beta;
  } else {
    const double steps = 2.0 * static_cast<double>(p - 1);  // a ring allreduce: 2(P-1) steps of m/P each
    alpha = c.allreduce_fit.alpha_seconds / steps;
    rate = steps / (fits.allreduce.beta * static_cast<double>(p));
  }
  c.alpha_seconds = alpha;
  c.worker_bytes_per_second = rate;
  if (layout.pair_shares_a_node && layout.workers_per_node > 1) {
    c.intra_node_bytes_per_second = rate;
    c.intra_node_alpha_seconds = alpha;
    if (layout.declared_node_bytes_per_second > 0) c.worker_bytes_per_second = layout.declared_node_bytes_per_second;
  }
  c.server_bytes_per_second = c.worker_bytes_per_second;
  if (fits.incast && fits.incast->beta > 0) c.server_bytes_per_second = static_cast<double>(p - 1) / fits.incast->beta;
  return c;
}

}  // namespace distsgd::cli
