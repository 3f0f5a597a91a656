#include "distsgd/sim/analytical/synchronous_model.hpp"

#include <algorithm>

#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/sim/analytical/bucket_layout.hpp"
#include "distsgd/sim/analytical/merged_gradients.hpp"
#include "distsgd/sim/analytical/ps_links.hpp"
#include "distsgd/sim/analytical/ps_wait_free.hpp"
#include "distsgd/sim/analytical/shard_layout.hpp"

namespace distsgd::sim {
namespace {

// The tensors as layers of the DAG model (forward order) and their gradient bytes.
struct Groups {
  std::vector<LayerTimes> layers;  // comm left 0
  std::vector<double> bytes;
};

Groups tensor_layers(const ModelProfile& profile) {
  Groups g;
  for (const auto& t : profile.tensors) {
    g.layers.push_back({t.forward_seconds, t.backward_seconds, 0});
    g.bytes.push_back(static_cast<double>(t.parameters * profile.bytes_per_parameter));
  }
  return g;
}

// The tensors grouped into buckets as AR-SGD forms them (bucket_layout.hpp), in forward order.
Groups buckets(const ModelProfile& profile, const AllreduceSettings& settings) {
  const BucketLayout layout = make_bucket_layout(profile, settings.first_bucket_bytes, settings.bucket_bytes);
  Groups g;
  for (std::size_t b = layout.size(); b-- > 0;) {  // bucket 0 holds the last tensors
    LayerTimes bucket{};
    for (std::size_t t = layout.last[b] + 1; t-- > layout.first[b];) {  // summed in backward order, as they are made
      bucket.forward += profile.tensors[t].forward_seconds;
      bucket.backward += profile.tensors[t].backward_seconds;
    }
    g.layers.push_back(bucket);
    g.bytes.push_back(layout.bytes[b]);
  }
  return g;
}

// Each group's communication, `seconds(cost, bytes)`, on the idle link and beside compute.
template <class Seconds>
std::vector<LayerTimes> with_comm(Groups g, const LinkCost& idle, const LinkCost& computing, Seconds seconds) {
  for (std::size_t i = 0; i < g.layers.size(); ++i) {
    g.layers[i].comm = seconds(idle, g.bytes[i]);
    g.layers[i].comm_computing = seconds(computing, g.bytes[i]);
  }
  return g.layers;
}

const std::vector<std::pair<std::string, AllreduceSettings>>& overlaps() {
  static const std::vector<std::pair<std::string, AllreduceSettings>> all = {
      {"none", {false}},
      {"wfbp", {true}},
      {"mgwfbp", {true, 0, 0, AllreduceSchedule::kMgwfbp}},
      {"merge-optimal", {true, 0, 0, AllreduceSchedule::kOptimalMerge}},
      {"multistep", {true, 0, 0, AllreduceSchedule::kMultistep}},
  };
  return all;
}

}  // namespace

std::vector<std::string> allreduce_overlap_names() {
  std::vector<std::string> names;
  for (const auto& entry : overlaps()) names.push_back(entry.first);
  return names;
}

AllreduceSettings allreduce_settings(const std::string& overlap, double bucket_bytes, double first_bucket_bytes) {
  for (const auto& [name, settings] : overlaps()) {
    if (name != overlap) continue;
    AllreduceSettings s = settings;
    s.bucket_bytes = bucket_bytes;
    s.first_bucket_bytes = first_bucket_bytes;
    return s;
  }
  throw Error("--overlap must be " + join_or(allreduce_overlap_names()) + " (got '" + overlap + "')");
}

MergedLayers merged_tensors(const ModelProfile& profile, int64_t workers, const LinkCost& ring, AllreduceSchedule merge,
                            double interference_alpha, double allreduce_alpha_scale) {
  require(merge == AllreduceSchedule::kMgwfbp || merge == AllreduceSchedule::kOptimalMerge,
          "merged_tensors: a merging schedule (mgwfbp or merge-optimal)");
  const Groups tensors = tensor_layers(profile);
  // The merge decides with the cost beside compute (where its groups mostly run).
  LinkCost busy_ring = ring;
  busy_ring.alpha = (ring.alpha + interference_alpha) * allreduce_alpha_scale;
  const auto busy = [&](double bytes) { return ring_allreduce_seconds(busy_ring, workers, bytes); };
  return merge == AllreduceSchedule::kOptimalMerge ? merge_gradients_optimal(tensors.layers, tensors.bytes, busy)
                                                   : merge_gradients_mgwfbp(tensors.layers, tensors.bytes, busy);
}

Prediction predict_allreduce_sgd(const ModelProfile& profile, int64_t workers, const LinkCost& ring,
                                 const LinkCost& alltoall, const AllreduceSettings& settings, double interference_alpha,
                                 double allreduce_alpha_scale) {
  require(workers >= 1, "AR-SGD needs at least one worker");
  require(!profile.tensors.empty(), "the profile has no tensors");
  const double update = profile.update_seconds_per_byte * profile.gradient_bytes();
  const double forward = profile.forward_seconds(), backward = profile.backward_seconds();
  const auto allreduce = [&](LinkCost cost, double bytes) {
    cost.alpha *= allreduce_alpha_scale;
    return ring_allreduce_seconds(cost, workers, bytes);
  };
  if (!settings.wait_free) {
    return prediction_from_iteration(profile, workers,
                                     forward + backward + allreduce(ring, profile.gradient_bytes()) + update);
  }
  // A collective that starts while the worker computes pays the interference on every step.
  LinkCost busy_ring = ring, busy_alltoall = alltoall;
  busy_ring.alpha += interference_alpha;
  busy_alltoall.alpha += interference_alpha;
  switch (settings.schedule) {
    case AllreduceSchedule::kBuckets: {
      const auto layers = with_comm(buckets(profile, settings), ring, busy_ring, allreduce);
      return prediction_from_iteration(profile, workers,
                                       forward + backward + wfbp_exposed_communication_seconds(layers) + update);
    }
    case AllreduceSchedule::kMgwfbp:
    case AllreduceSchedule::kOptimalMerge: {
      const auto merged =
          merged_tensors(profile, workers, ring, settings.schedule, interference_alpha, allreduce_alpha_scale);
      const auto layers = with_comm({merged.layers, merged.bytes}, ring, busy_ring, allreduce);
      return prediction_from_iteration(profile, workers,
                                       forward + backward + wfbp_exposed_communication_seconds(layers) + update);
    }
    case AllreduceSchedule::kMultistep: {
      const Groups b = buckets(profile, settings);
      // The alltoall of 1/P slices and the local sum move and add what a ring reduce-scatter does.
      const auto scatter = with_comm(b, alltoall, busy_alltoall, [&](const LinkCost& cost, double bytes) {
        return ring_reduce_scatter_seconds(cost, workers, bytes);
      });
      const auto gather = with_comm(b, ring, busy_ring, [&](const LinkCost& cost, double bytes) {
        return ring_allgather_seconds(cost, workers, bytes);
      });
      const double sliced_update = update / static_cast<double>(workers);
      return prediction_from_iteration(profile, workers,
                                       forward + gathered_forward_exposed_seconds(gather) + backward +
                                           wfbp_exposed_communication_seconds(scatter) + sliced_update);
    }
  }
  throw Error("unknown AR-SGD schedule");
}

Prediction predict_allreduce_sgd(const ModelProfile& profile, int64_t workers, const LinkCost& allreduce,
                                 const AllreduceSettings& settings) {
  return predict_allreduce_sgd(profile, workers, allreduce, allreduce, settings);
}

Prediction predict_allreduce_sgd(const ModelProfile& profile, int64_t workers, const ClusterDescription& cluster,
                                 const AllreduceSettings& settings) {
  return predict_allreduce_sgd(profile, workers, cluster.allreduce_cost(workers), cluster.alltoall_cost(workers),
                               settings, cluster.interference_alpha(workers), cluster.allreduce_alpha_scale(workers));
}

Prediction predict_bsp(const ModelProfile& profile, int64_t workers, int64_t servers, const ClusterDescription& cluster,
                       const PsLayout& layout) {
  require(servers >= 1, "BSP needs at least one server");
  const double m = profile.gradient_bytes();
  const double shard = largest_shard_bytes(profile, servers, layout.sharding);
  const int64_t per_node = layout.local_aggregation ? cluster.workers_on_fullest_node(workers) : 1;
  const double pushers = static_cast<double>(layout.local_aggregation ? cluster.node_of(workers - 1) + 1 : workers);
  const double uplink =
      layout.local_aggregation ? cluster.worker_bytes_per_second : cluster.worker_share_bytes_per_second(workers);
  // Each shard takes its part of every push over its link, while each pusher sends m over its (share of the) link;
  // servers on the workers' nodes share those nodes' links instead (ps_links.hpp). Where NICs send one message at a
  // time (egress_queue kFifo) a server answers the workers one after another, so they compute and push again one
  // after another: a push finds the shard's link free, the replies still leave it one by one (servers behind links
  // of their own; on the workers' nodes the links are taken as shared).
  const bool fifo = cluster.egress_queue == ClusterDescription::EgressQueue::kFifo;
  const double pushes_at_once = fifo ? 1.0 : pushers;
  const double pull_links =
      cluster.servers_on_worker_nodes()
          ? colocated_ps_round_seconds(cluster, workers, servers, layout.local_aggregation, m, shard)
          : std::max(m / uplink, pushers * shard / cluster.server_bytes_per_second);
  const double push_links = cluster.servers_on_worker_nodes()
                                ? pull_links
                                : std::max(m / uplink, pushes_at_once * shard / cluster.server_bytes_per_second);
  const double push = cluster.alpha_seconds + push_links;
  const double pull = cluster.alpha_seconds + pull_links;
  const double aggregate = pushers * shard * cluster.gamma_seconds_per_byte;
  const double update = profile.update_seconds_per_byte * shard;  // each shard updates its part, in parallel
  const double members = static_cast<double>(per_node - 1);
  // Local aggregation: the node's other workers' gradients (`bytes` of each) in to its leader, and their sum.
  const double hand_over = per_node > 1 ? cluster.intra_node_alpha() + members * m / cluster.intra_node_rate() : 0.0;
  const double host_sum = members * m * cluster.gamma_seconds_per_byte;
  if (!layout.wait_free) {
    // Each server processes every pusher's push of its shard in turn (one request each: the reply is its answer).
    const double processing = server_processing_seconds(cluster, pushers, pushers * shard);
    return prediction_from_iteration(profile, workers,
                                     profile.forward_seconds() + profile.backward_seconds() + 2 * hand_over + host_sum +
                                         push + aggregate + update + processing + pull);
  }
  WaitFreeRoundCosts costs;
  costs.alpha = cluster.alpha_seconds;
  if (!cluster.servers_on_worker_nodes()) {
    // A worker's (share of its node's) link, every pusher's flow on each shard's.
    route_over_servers_own_links(costs, servers, uplink, cluster.server_bytes_per_second, pushers, pushes_at_once);
  } else {
    // A group per node: its pushers' flows (its leader's alone with local aggregation).
    route_over_colocated_servers(costs, cluster, workers, servers, [&](int64_t n) {
      return layout.local_aggregation
                 ? 1.0
                 : static_cast<double>(std::min(cluster.workers_per_node, workers - n * cluster.workers_per_node));
    });
  }
  costs.processing = [&](double bytes) {
    return pushers * bytes * cluster.gamma_seconds_per_byte + profile.update_seconds_per_byte * bytes +
           server_processing_seconds(cluster, pushers, pushers * bytes);
  };
  if (per_node > 1) {
    costs.hand_over_members = members;
    costs.intra_alpha = cluster.intra_node_alpha();
    costs.intra_seconds_per_byte = 1 / cluster.intra_node_rate();
    costs.gamma_seconds_per_byte = cluster.gamma_seconds_per_byte;
  }
  const double exposed = wait_free_rounds_seconds(profile, shard_ranges(profile, servers, layout.sharding),
                                                  layout.first_bucket_bytes, layout.bucket_bytes, costs) -
                         profile.backward_seconds();
  // The parameters go back to the node's other workers once every pull is in.
  return prediction_from_iteration(profile, workers,
                                   profile.forward_seconds() + profile.backward_seconds() + exposed + hand_over);
}

}  // namespace distsgd::sim
