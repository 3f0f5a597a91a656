#include "distsgd/sim/analytical/asynchronous_model.hpp"

#include <algorithm>

#include "distsgd/core/error.hpp"
#include "distsgd/sim/analytical/ps_links.hpp"
#include "distsgd/sim/analytical/ps_wait_free.hpp"
#include "distsgd/sim/analytical/shard_layout.hpp"

namespace distsgd::sim {
namespace {

// From the total rate of iterations over all workers to the prediction (iteration time is per worker).
Prediction from_rate(const ModelProfile& profile, int64_t workers, double iterations_per_second) {
  return prediction_from_iteration(profile, workers, static_cast<double>(workers) / iterations_per_second);
}

// Messages of m bytes the servers can take in (or send out) per second: each server takes its shard of each over
// its link, and processes it in its time per request and per byte, whichever is slower. `requests`: the messages a
// worker sends a server per message of m (its push; SSP's pulls add theirs), each charged as the DES and the virtual
// cluster charge it (DesContext::send_to_server, ShardServer::spend_processing).
// Servers on the workers' nodes have no link of their own: the nodes' links are counted by link_iterations_per_second.
double server_messages_per_second(const ModelProfile& profile, int64_t servers, const ClusterDescription& c,
                                  const PsLayout& layout, double requests = 1) {
  require(servers >= 1, "a parameter-server algorithm needs at least one server");
  const double shard = largest_shard_bytes(profile, servers, layout.sharding);
  const double link = c.servers_on_worker_nodes() ? 0 : shard / c.server_bytes_per_second;
  return 1.0 / std::max(link, server_processing_seconds(c, requests, shard));
}

// Iterations per second (all workers) the nodes' links carry when each iteration sends `messages` of m bytes up
// each worker's node link: the workers of the fullest node share its link (IPDPS 2021: containers on a host share
// its NIC), so each gets worker_share_bytes_per_second. Pushes go up, pulls come down: full duplex, one cap.
double node_link_iterations_per_second(const ModelProfile& profile, int64_t workers, double messages,
                                       const ClusterDescription& c) {
  return static_cast<double>(workers) * c.worker_share_bytes_per_second(workers) /
         (messages * profile.gradient_bytes());
}

// The same cap for every placement of the servers: with servers on the workers' nodes, a node's link also carries
// its servers' traffic (ps_links.hpp); `down`: the messages of m a worker receives per iteration.
double link_iterations_per_second(const ModelProfile& profile, int64_t workers, int64_t servers, double up, double down,
                                  const ClusterDescription& c, const PsLayout& layout) {
  if (!c.servers_on_worker_nodes()) return node_link_iterations_per_second(profile, workers, std::max(up, down), c);
  return colocated_ps_iterations_per_second(c, workers, servers, profile.gradient_bytes(),
                                            largest_shard_bytes(profile, servers, layout.sharding), up, down);
}

// One model's transfer between a worker and the servers, for every placement of the servers.
double transfer_seconds(const ModelProfile& profile, int64_t workers, int64_t servers, const ClusterDescription& c) {
  if (!c.servers_on_worker_nodes()) return model_transfer_seconds(profile, c);
  return colocated_model_transfer_seconds(c, workers, servers, profile.gradient_bytes());
}

// ASP under --overlap wfbp with servers behind links of their own: from the start of backward until the last reply
// is back, one worker's pieces as stop-and-wait rounds per shard (ps_wait_free.hpp), each over the worker's link and
// the shard's, processed alone (the shard applies each piece at once); the other workers' share of the servers'
// links is left to the caps.
double wait_free_backward_and_round_trip_seconds(const ModelProfile& profile, int64_t servers,
                                                 const ClusterDescription& c, const PsLayout& layout) {
  WaitFreeRoundCosts costs;
  costs.alpha = c.alpha_seconds;
  route_over_servers_own_links(costs, servers, c.worker_bytes_per_second, c.server_bytes_per_second, 1);
  costs.processing = [&](double bytes) {
    return profile.update_seconds_per_byte * bytes + server_processing_seconds(c, 1, bytes);
  };
  return wait_free_rounds_seconds(profile, shard_ranges(profile, servers, layout.sharding), layout.first_bucket_bytes,
                                  layout.bucket_bytes, costs);
}

}  // namespace

Prediction predict_asp(const ModelProfile& profile, int64_t workers, int64_t servers, const ClusterDescription& c,
                       const PsLayout& layout) {
  const bool wait_free = layout.wait_free && !c.servers_on_worker_nodes();
  const double cycle =
      wait_free
          ? profile.forward_seconds() + wait_free_backward_and_round_trip_seconds(profile, servers, c, layout)
          : profile.forward_seconds() + profile.backward_seconds() + 2 * transfer_seconds(profile, workers, servers, c);
  const double rate =
      std::min({static_cast<double>(workers) / cycle, server_messages_per_second(profile, servers, c, layout),
                link_iterations_per_second(profile, workers, servers, 1, 1, c, layout)});
  return from_rate(profile, workers, rate);
}

Prediction predict_ssp(const ModelProfile& profile, int64_t workers, int64_t servers, int64_t staleness,
                       const ClusterDescription& c, const PsLayout& layout) {
  require(staleness >= 0, "SSP's staleness must not be negative");
  if (staleness == 0) {
    return predict_bsp(profile, workers, servers, c, {layout.sharding});
  }
  const double pulls_per_iteration = 1.0 / static_cast<double>(staleness + 1);
  const double cycle =
      compute_seconds(profile) + (1 + pulls_per_iteration) * transfer_seconds(profile, workers, servers, c);
  const double rate =
      std::min({static_cast<double>(workers) / cycle,
                server_messages_per_second(profile, servers, c, layout, 1 + pulls_per_iteration),
                link_iterations_per_second(profile, workers, servers, 1, pulls_per_iteration, c, layout)});
  return from_rate(profile, workers, rate);
}

Prediction predict_easgd(const ModelProfile& profile, int64_t workers, int64_t servers, int64_t tau,
                         const ClusterDescription& c, const PsLayout& layout) {
  require(tau >= 1, "EASGD's tau must be at least 1");
  const double cycle =
      compute_seconds(profile) + 2 * transfer_seconds(profile, workers, servers, c) / static_cast<double>(tau);
  const double rate = std::min({static_cast<double>(workers) / cycle,
                                static_cast<double>(tau) * server_messages_per_second(profile, servers, c, layout),
                                link_iterations_per_second(profile, workers, servers, 1.0 / static_cast<double>(tau),
                                                           1.0 / static_cast<double>(tau), c, layout)});
  return from_rate(profile, workers, rate);
}

Prediction predict_aladdin(const ModelProfile& profile, int64_t workers, int64_t servers, int64_t pi,
                           const ClusterDescription& c, const PsLayout& layout) {
  require(pi >= 1, "ALADDIN's pi must be at least 1");
  // Every pi gradients the server's handler of a worker sends it the model and waits for that send before it takes
  // the worker's next gradient (algo/aladdin.cpp; a send's bytes move only once its receive is posted), so the
  // worker's uplink rests for one model's transfer per pi gradients. With servers on the workers' nodes, its own
  // node's shards go over its intra-node link meanwhile.
  const double m = profile.gradient_bytes();
  const double one_model = c.servers_on_worker_nodes() ? colocated_uplink_seconds(c, workers, servers, m)
                                                       : m / c.worker_share_bytes_per_second(workers);
  const double own_uplink = one_model * (1 + 1.0 / static_cast<double>(pi));
  const double cycle = std::max(compute_seconds(profile), own_uplink);
  double rate = std::min(static_cast<double>(workers) / cycle, server_messages_per_second(profile, servers, c, layout));
  // Servers on the workers' nodes: a gradient up every iteration and the model down every pi share the nodes' links.
  if (c.servers_on_worker_nodes()) {
    rate = std::min(rate,
                    link_iterations_per_second(profile, workers, servers, 1, 1.0 / static_cast<double>(pi), c, layout));
  }
  return from_rate(profile, workers, rate);
}

}  // namespace distsgd::sim
