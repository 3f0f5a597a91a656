#include "distsgd/sim/analytical/ps_links.hpp"

#include <algorithm>
#include <limits>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {
namespace {

// How the S servers fall on the N nodes (server s on node s mod N): the fewest and most a node holds.
struct ServersPerNode {
  double fewest, most;
};

ServersPerNode servers_per_node(int64_t servers, int64_t nodes) {
  return {static_cast<double>(servers / nodes), static_cast<double>((servers + nodes - 1) / nodes)};
}

}  // namespace

double colocated_ps_round_seconds(const ClusterDescription& c, int64_t workers, int64_t servers,
                                  bool one_pusher_per_node, double m, double shard) {
  require(c.servers_on_worker_nodes() && workers >= 1 && servers >= 1, "colocated_ps_round_seconds: bad arguments");
  const int64_t nodes = c.nodes(workers);
  const auto held = servers_per_node(servers, nodes);
  const double s = static_cast<double>(servers);
  const double per_node = one_pusher_per_node ? 1 : static_cast<double>(c.workers_on_fullest_node(workers));
  const double pushers = one_pusher_per_node ? static_cast<double>(nodes) : static_cast<double>(workers);
  // The node links: out, a node's pushers' shards for the other nodes' servers; in, the other nodes' pushers'
  // shards for its servers.
  const double out = per_node * m * (1 - held.fewest / s);
  const double in = held.most * shard * (pushers - per_node);
  double seconds = std::max(out, in) / c.worker_bytes_per_second;
  // Inside the node: a server's port takes its own node's pushers' shards; with several workers a node, each
  // pusher's intra-node link carries its shards for its own node's servers.
  seconds = std::max(seconds, per_node * shard / c.intra_node_rate());
  if (c.workers_per_node > 1 && workers > 1) seconds = std::max(seconds, m * held.most / s / c.intra_node_rate());
  return seconds;
}

double colocated_ps_iterations_per_second(const ClusterDescription& c, int64_t workers, int64_t servers, double m,
                                          double shard, double up, double down) {
  require(c.servers_on_worker_nodes() && workers >= 1 && servers >= 1,
          "colocated_ps_iterations_per_second: bad arguments");
  const int64_t nodes = c.nodes(workers);
  const auto held = servers_per_node(servers, nodes);
  const double s = static_cast<double>(servers), w = static_cast<double>(workers);
  const double mine = static_cast<double>(c.workers_on_fullest_node(workers)), others = w - mine;
  // Bytes through the fullest node's link while every worker takes one iteration, for a node holding k servers:
  // its workers' messages to and from the other nodes' servers, and its servers' to and from the other nodes'
  // workers.
  const auto busiest = [&](double k) {
    const double remote = 1 - k / s;
    const double out = mine * up * m * remote + others * down * k * shard;
    const double in = mine * down * m * remote + others * up * k * shard;
    return std::max(out, in);
  };
  double rate = nodes > 1 ? w * c.worker_bytes_per_second / std::max(busiest(held.fewest), busiest(held.most))
                          : std::numeric_limits<double>::infinity();
  // A server's port into its node: its own node's workers' shards.
  rate = std::min(rate, w * c.intra_node_rate() / (mine * std::max(up, down) * shard));
  return rate;
}

double colocated_model_transfer_seconds(const ClusterDescription& c, int64_t workers, int64_t servers, double m) {
  require(c.servers_on_worker_nodes() && workers >= 1 && servers >= 1,
          "colocated_model_transfer_seconds: bad arguments");
  const auto held = servers_per_node(servers, c.nodes(workers));
  const double s = static_cast<double>(servers);
  const double remote = m * (1 - held.fewest / s) / c.worker_bytes_per_second;
  const double local = m * held.most / s / c.intra_node_rate();
  return (remote > 0 ? c.alpha_seconds : c.intra_node_alpha()) + std::max(remote, local);
}

double colocated_uplink_seconds(const ClusterDescription& c, int64_t workers, int64_t servers, double m) {
  require(c.servers_on_worker_nodes() && workers >= 1 && servers >= 1, "colocated_uplink_seconds: bad arguments");
  const auto held = servers_per_node(servers, c.nodes(workers));
  const double s = static_cast<double>(servers);
  return std::max(m * (1 - held.fewest / s) / c.worker_share_bytes_per_second(workers),
                  m * held.most / s / c.intra_node_rate());
}

}  // namespace distsgd::sim
