#include "distsgd/sim/analytical/decentralized_model.hpp"

#include <algorithm>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {
namespace {}  // namespace

Prediction predict_gosgd(const ModelProfile& profile, int64_t workers, double probability,
                         const ClusterDescription& c) {
  require(probability >= 0 && probability <= 1, "GoSGD's probability must be in [0, 1]");
  const double send = workers > 1 ? probability * model_transfer_seconds(profile, c) : 0;
  return prediction_from_iteration(profile, workers, compute_seconds(profile) + send);
}

Prediction predict_gossip(const ModelProfile& profile, int64_t workers, bool pull, const ClusterDescription& c) {
  if (!pull || workers < 2) {
    const double exchange = workers > 1 ? model_transfer_seconds(profile, c) : 0;
    return prediction_from_iteration(profile, workers, compute_seconds(profile) + exchange);
  }
  const double pulled = c.alpha_seconds + model_transfer_seconds(profile, c);  // the request, then the model
  const double average_and_update = profile.update_seconds_per_byte * 2 * profile.gradient_bytes();
  return prediction_from_iteration(
      profile, workers, std::max(profile.forward_seconds() + profile.backward_seconds(), pulled) + average_and_update);
}

Prediction predict_sgp(const ModelProfile& profile, int64_t workers, bool overlap, const ClusterDescription& c) {
  const double push = workers > 1 ? model_transfer_seconds(profile, c) : 0;
  const double compute = compute_seconds(profile);
  return prediction_from_iteration(profile, workers, overlap ? std::max(compute, push) : compute + push);
}

Prediction predict_adpsgd(const ModelProfile& profile, int64_t workers, const ClusterDescription& c) {
  const double passive = compute_seconds(profile);
  if (workers < 2) return prediction_from_iteration(profile, workers, passive);
  const double pass = profile.update_seconds_per_byte * profile.gradient_bytes();
  const double exchange = 2 * model_transfer_seconds(profile, c) + 2 * pass;
  const double active = std::max(profile.forward_seconds() + profile.backward_seconds(), exchange) + pass;
  // The iteration time that gives the sum of the two kinds' throughputs (odd ranks active: workers / 2 of them).
  const auto actives = static_cast<double>(workers / 2), passives = static_cast<double>(workers) - actives;
  return prediction_from_iteration(profile, workers,
                                   static_cast<double>(workers) / (passives / passive + actives / active));
}

}  // namespace distsgd::sim
