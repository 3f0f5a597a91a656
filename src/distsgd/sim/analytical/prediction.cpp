#include "distsgd/sim/analytical/prediction.hpp"

#include <algorithm>
#include <utility>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {

double compute_seconds(const ModelProfile& profile) {
  return profile.forward_seconds() + profile.backward_seconds() +
         profile.update_seconds_per_byte * profile.gradient_bytes();
}

double model_transfer_seconds(const ModelProfile& profile, const ClusterDescription& cluster) {
  return cluster.alpha_seconds + profile.gradient_bytes() / cluster.worker_bytes_per_second;
}

ModelProfile with_compute_stretched(ModelProfile profile, double factor) {
  for (auto& t : profile.tensors) {
    t.forward_seconds *= factor;
    t.backward_seconds *= factor;
  }
  profile.update_seconds_per_byte *= factor;
  return profile;
}

ModelProfile as_run_on(ModelProfile profile, const ClusterDescription& cluster) {
  profile = with_compute_stretched(std::move(profile), cluster.compute_scale);
  if (!profile.tensors.empty()) profile.tensors.front().forward_seconds += cluster.iteration_overhead_seconds;
  return profile;
}

double server_processing_seconds(const ClusterDescription& cluster, double requests, double bytes) {
  return requests * cluster.server_seconds_per_request + bytes * cluster.server_seconds_per_byte;
}

Prediction prediction_from_iteration(const ModelProfile& profile, int64_t workers, double iteration_seconds) {
  require(workers >= 1, "a prediction needs at least one worker");
  Prediction p;
  // The batch is read while the previous one trains (the loader prefetches): the slower of the two sets the pace.
  p.iteration_seconds = std::max(iteration_seconds, profile.data_seconds + profile.h2d_seconds);
  p.exposed_communication_seconds = std::max(0.0, p.iteration_seconds - compute_seconds(profile));
  p.samples_per_second = static_cast<double>(workers * profile.batch_size) / p.iteration_seconds;
  p.scaling_efficiency = compute_seconds(profile) / p.iteration_seconds;
  return p;
}

}  // namespace distsgd::sim
