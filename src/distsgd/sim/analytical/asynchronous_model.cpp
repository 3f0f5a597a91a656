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

// One worker's pieces as rounds per shard (ps_wait_free.hpp) over the worker's link and the shard's (servers behind
// links of their own), each processed alone (the shard applies each piece at once), from the start of backward: as
// backward hands them out (--overlap wfbp) or all after it. ASP's are answered: stop-and-wait, until the last reply is
// back. SSP's are not: until the last piece is processed (the shard's handler of the worker takes a piece, or a pull's
// request, only once the one before is processed). The other workers' share of the servers' links is left to the caps.
double one_workers_rounds_seconds(const ModelProfile& profile, int64_t servers, const ClusterDescription& c,
                                  const PsLayout& layout, bool replies) {
  WaitFreeRoundCosts costs;
  costs.alpha = c.alpha_seconds;
  costs.replies = replies;
  route_over_servers_own_links(costs, servers, c.worker_bytes_per_second, c.server_bytes_per_second, 1, 1);
  costs.processing = [&](double bytes) {
    return profile.update_seconds_per_byte * bytes + server_processing_seconds(c, 1, bytes);
  };
  const double whole = 2 * profile.gradient_bytes();  // one bucket, handed out when backward ends
  return wait_free_rounds_seconds(profile, shard_ranges(profile, servers, layout.sharding),
                                  layout.wait_free ? layout.first_bucket_bytes : whole,
                                  layout.wait_free ? layout.bucket_bytes : whole, costs);
}

// SSP's unanswered push, from the start of backward until every shard has processed the worker's last piece; with
// the servers on the workers' nodes, the model's transfer and its processing after backward.
double unanswered_push_seconds(const ModelProfile& profile, int64_t workers, int64_t servers,
                               const ClusterDescription& c, const PsLayout& layout) {
  if (!c.servers_on_worker_nodes()) return one_workers_rounds_seconds(profile, servers, c, layout, false);
  const double shard = largest_shard_bytes(profile, servers, layout.sharding);
  return profile.backward_seconds() + transfer_seconds(profile, workers, servers, c) +
         profile.update_seconds_per_byte * shard + server_processing_seconds(c, 1, shard);
}

// SSP's pulls per iteration (SspWorker::after_backward), averaged over the workers: one every s + 1 iterations, and
// one whenever the slowest clock the last pull reported is more than s behind. A pull at clock c waits at each shard
// behind the worker's own push of c, but not behind the others': for all but the slowest worker the slowest clock it
// reports is c - 1 (the others' pushes of c still on their way; the discrete-event simulator's clock gaps say so), so
// its next pull comes s iterations later, one before the periodic one: two every s + 1 iterations. The slowest (and
// a worker alone) sees its own clock: the periodic pulls only. The runs count what this says: 0.39, 0.42-0.46 and 0.48
// pulls a step at 2, 4 and 8 workers with s = 3, against 0.375, 0.44 and 0.47 (bench/README, "The analytical SSP as
// the code runs it").
double ssp_pulls_per_iteration(int64_t workers, int64_t staleness) {
  const double period = static_cast<double>(staleness + 1);
  const double others = static_cast<double>(workers - 1);
  return (others * std::min(1.0, 2 / period) + 1 / period) / static_cast<double>(workers);
}

}  // namespace

Prediction predict_asp(const ModelProfile& profile, int64_t workers, int64_t servers, const ClusterDescription& c,
                       const PsLayout& layout) {
  const bool wait_free = layout.wait_free && !c.servers_on_worker_nodes();
  const double cycle =
      wait_free
          ? profile.forward_seconds() + one_workers_rounds_seconds(profile, servers, c, layout, true)
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
  const double pulls = ssp_pulls_per_iteration(workers, staleness);
  const double update = profile.update_seconds_per_byte * profile.gradient_bytes();
  const double push = transfer_seconds(profile, workers, servers, c);
  // A pull: its request (behind the push before it), the model back.
  const double pull = c.alpha_seconds + server_processing_seconds(c, 1, 0) + push;
  // The worker's pace: its compute, and at each pull what is left of the push before it once the update is done.
  const double tail = std::max(
      0.0, unanswered_push_seconds(profile, workers, servers, c, layout) - profile.backward_seconds() - update);
  const double worker_paced = compute_seconds(profile) + pulls * (tail + pull);
  // The uplink's pace where it is the slower (pushes queue in the send buffers): a push per iteration, and at each
  // pull the link rests for the pull and for the compute until the next iteration's first piece.
  const bool wait_free = layout.wait_free && !c.servers_on_worker_nodes();
  const double lead =
      profile.forward_seconds() +
      (wait_free ? first_bucket_backward_seconds(profile, layout.first_bucket_bytes, layout.bucket_bytes)
                 : profile.backward_seconds());
  const double link_paced = push + pulls * (pull + lead);
  const double cycle = std::max(worker_paced, link_paced);
  const double rate = std::min({static_cast<double>(workers) / cycle,
                                server_messages_per_second(profile, servers, c, layout, 1 + pulls),
                                link_iterations_per_second(profile, workers, servers, 1, pulls, c, layout)});
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
