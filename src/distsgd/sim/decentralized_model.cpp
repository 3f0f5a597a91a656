#include "distsgd/sim/decentralized_model.hpp"

#include <algorithm>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {
namespace {

double compute_seconds(const ModelProfile& profile) {
  return profile.forward_seconds() + profile.backward_seconds() +
         profile.update_seconds_per_byte * profile.gradient_bytes();
}

double model_transfer_seconds(const ModelProfile& profile, const ClusterDescription& c) {
  return c.alpha_seconds + profile.gradient_bytes() / c.worker_bytes_per_second;
}

Prediction from_cycle(const ModelProfile& profile, int64_t workers, double cycle) {
  require(workers >= 1, "at least one worker");
  Prediction p;
  p.iteration_seconds = std::max(cycle, profile.data_seconds + profile.h2d_seconds);
  p.samples_per_second = static_cast<double>(workers * profile.batch_size) / p.iteration_seconds;
  p.exposed_communication_seconds = std::max(0.0, p.iteration_seconds - compute_seconds(profile));
  p.scaling_efficiency = compute_seconds(profile) / p.iteration_seconds;
  return p;
}

}  // namespace

Prediction predict_gosgd(const ModelProfile& profile, int64_t workers, double probability,
                         const ClusterDescription& c) {
  require(probability >= 0 && probability <= 1, "GoSGD's probability must be in [0, 1]");
  const double send = workers > 1 ? probability * model_transfer_seconds(profile, c) : 0;
  return from_cycle(profile, workers, compute_seconds(profile) + send);
}

Prediction predict_gossip(const ModelProfile& profile, int64_t workers, const ClusterDescription& c) {
  const double exchange = workers > 1 ? model_transfer_seconds(profile, c) : 0;
  return from_cycle(profile, workers, compute_seconds(profile) + exchange);
}

Prediction predict_sgp(const ModelProfile& profile, int64_t workers, bool overlap, const ClusterDescription& c) {
  const double push = workers > 1 ? model_transfer_seconds(profile, c) : 0;
  const double compute = compute_seconds(profile);
  return from_cycle(profile, workers, overlap ? std::max(compute, push) : compute + push);
}

Prediction predict_adpsgd(const ModelProfile& profile, int64_t workers, const ClusterDescription& c) {
  const double exchange = workers > 1 ? model_transfer_seconds(profile, c) : 0;
  return from_cycle(profile, workers, std::max(compute_seconds(profile), exchange));
}

}  // namespace distsgd::sim
