#include "distsgd/sim/synchronous_model.hpp"

#include <algorithm>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {
namespace {

// The tensors grouped into buckets, each a layer of the DAG model (forward order), its communication the bucket's.
std::vector<LayerTimes> bucket_layers(const ModelProfile& profile, int64_t workers, const LinkCost& cost,
                                      const AllreduceSettings& settings) {
  std::vector<LayerTimes> buckets;  // built in backward order, reversed at the end
  double bucket_bytes = 0;
  bool first = true;
  for (std::size_t i = profile.tensors.size(); i-- > 0;) {
    const auto& t = profile.tensors[i];
    const double bytes = static_cast<double>(t.parameters * profile.bytes_per_parameter);
    const double limit = first ? settings.first_bucket_bytes : settings.bucket_bytes;
    if (buckets.empty() || bucket_bytes + bytes > limit || limit <= 0) {
      if (!buckets.empty()) {
        buckets.back().comm = ring_allreduce_seconds(cost, workers, bucket_bytes);
        first = false;
      }
      buckets.push_back({});
      bucket_bytes = 0;
    }
    buckets.back().forward += t.forward_seconds;
    buckets.back().backward += t.backward_seconds;
    bucket_bytes += bytes;
  }
  buckets.back().comm = ring_allreduce_seconds(cost, workers, bucket_bytes);
  std::reverse(buckets.begin(), buckets.end());
  return buckets;
}

}  // namespace

Prediction predict_allreduce_sgd(const ModelProfile& profile, int64_t workers, const LinkCost& allreduce,
                                 const AllreduceSettings& settings) {
  require(workers >= 1, "AR-SGD needs at least one worker");
  require(!profile.tensors.empty(), "the profile has no tensors");
  const double update = profile.update_seconds_per_byte * profile.gradient_bytes();
  const double forward = profile.forward_seconds(), backward = profile.backward_seconds();
  if (!settings.wait_free) {
    const double comm = ring_allreduce_seconds(allreduce, workers, profile.gradient_bytes());
    return prediction_from_iteration(profile, workers, forward + backward + comm + update);
  }
  const auto buckets = bucket_layers(profile, workers, allreduce, settings);
  return prediction_from_iteration(profile, workers,
                                   forward + backward + wfbp_exposed_communication_seconds(buckets) + update);
}

Prediction predict_bsp(const ModelProfile& profile, int64_t workers, int64_t servers,
                       const ClusterDescription& cluster) {
  require(servers >= 1, "BSP needs at least one server");
  const double m = profile.gradient_bytes();
  const double shard = m / static_cast<double>(servers);
  const double push = ps_push_seconds(cluster.alpha_seconds, workers, servers, m, cluster.worker_bytes_per_second,
                                      cluster.server_bytes_per_second);
  const double pull = push;  // symmetric: each server sends P*m/S, each worker receives m
  const double aggregate = static_cast<double>(workers) * shard * cluster.gamma_seconds_per_byte;
  const double update = profile.update_seconds_per_byte * shard;  // each shard updates its part, in parallel
  return prediction_from_iteration(
      profile, workers, profile.forward_seconds() + profile.backward_seconds() + push + aggregate + update + pull);
}

}  // namespace distsgd::sim
