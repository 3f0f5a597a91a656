#include "distsgd/sim/analytical/ps_links.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {
namespace {

// What of a worker's m bytes for the servers stays in its node and what crosses the network (server s on node s mod
// N): at most the share of the fullest node's servers stays, at least that of the emptiest node's.
struct Shares {
  double fewest_servers, most_servers;  // on a node
  double remote, local;                 // the most of m that crosses the network, the most that stays in the node
};

Shares shares_of(const ClusterDescription& c, int64_t workers, int64_t servers, const char* what) {
  require(c.servers_on_worker_nodes() && workers >= 1 && servers >= 1, std::string(what) + ": bad arguments");
  const int64_t nodes = c.nodes(workers);
  const double s = static_cast<double>(servers);
  const double fewest = static_cast<double>(servers / nodes), most = static_cast<double>((servers + nodes - 1) / nodes);
  return {fewest, most, 1 - fewest / s, most / s};
}

}  // namespace

double colocated_ps_round_seconds(const ClusterDescription& c, int64_t workers, int64_t servers,
                                  bool one_pusher_per_node, double m, double shard) {
  const auto shares = shares_of(c, workers, servers, "colocated_ps_round_seconds");
  const double per_node = one_pusher_per_node ? 1 : static_cast<double>(c.workers_on_fullest_node(workers));
  const double pushers = one_pusher_per_node ? static_cast<double>(c.nodes(workers)) : static_cast<double>(workers);
  // The node links: out, a node's pushers' shards for the other nodes' servers; in, the other nodes' pushers'
  // shards for its servers.
  const double out = per_node * m * shares.remote;
  const double in = shares.most_servers * shard * (pushers - per_node);
  double seconds = std::max(out, in) / c.worker_bytes_per_second;
  // Inside the node: a server's port takes its own node's pushers' shards; with several workers a node, each
  // pusher's intra-node link carries its shards for its own node's servers.
  seconds = std::max(seconds, per_node * shard / c.intra_node_rate());
  if (c.workers_per_node > 1 && workers > 1) seconds = std::max(seconds, m * shares.local / c.intra_node_rate());
  return seconds;
}

double colocated_ps_iterations_per_second(const ClusterDescription& c, int64_t workers, int64_t servers, double m,
                                          double shard, double up, double down) {
  const auto shares = shares_of(c, workers, servers, "colocated_ps_iterations_per_second");
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
  double rate = c.nodes(workers) > 1 ? w * c.worker_bytes_per_second /
                                           std::max(busiest(shares.fewest_servers), busiest(shares.most_servers))
                                     : std::numeric_limits<double>::infinity();
  // A server's port into its node: its own node's workers' shards.
  rate = std::min(rate, w * c.intra_node_rate() / (mine * std::max(up, down) * shard));
  return rate;
}

double colocated_model_transfer_seconds(const ClusterDescription& c, int64_t workers, int64_t servers, double m) {
  const auto shares = shares_of(c, workers, servers, "colocated_model_transfer_seconds");
  const double remote = m * shares.remote / c.worker_bytes_per_second;
  return (remote > 0 ? c.alpha_seconds : c.intra_node_alpha()) +
         std::max(remote, m * shares.local / c.intra_node_rate());
}

double colocated_uplink_seconds(const ClusterDescription& c, int64_t workers, int64_t servers, double m) {
  const auto shares = shares_of(c, workers, servers, "colocated_uplink_seconds");
  return std::max(m * shares.remote / c.worker_share_bytes_per_second(workers), m * shares.local / c.intra_node_rate());
}

}  // namespace distsgd::sim
