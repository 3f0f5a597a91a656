#include "distsgd/sim/analytical/outer_model.hpp"

#include <algorithm>
#include <cmath>

#include "distsgd/core/error.hpp"
#include "distsgd/sim/analytical/collective_costs.hpp"
#include "distsgd/sim/analytical/powersgd_model.hpp"

namespace distsgd::sim {
namespace {

constexpr double kBlockValues = 64, kBlockHeaderBytes = 8;

double fragment_bytes(const ModelProfile& profile, const OuterLoopSettings& s) {
  return profile.gradient_bytes() / static_cast<double>(s.fragments);
}

// The bytes of one exchange's three allreduces with PowerSGD.
double powersgd_exchange_bytes(const PowerSgdStep& step) {
  return step.uncompressed_bytes + step.p_bytes + step.q_bytes;
}

// SlowMo over SGP: every inner step's push of the model, waited for, and the merge of the one that arrives (the
// exponential graph sends each worker exactly one message per step).
double sgp_step_seconds(const ModelProfile& profile, int64_t workers, const ClusterDescription& cluster,
                        const OuterLoopSettings& s) {
  if (!s.sgp_base || workers == 1) return 0;
  return model_transfer_seconds(profile, cluster) + profile.update_seconds_per_byte * profile.gradient_bytes();
}

}  // namespace

void check_outer_settings(const OuterLoopSettings& s) {
  require(s.sync_every >= 1, "--sync-every must be at least 1");
  require(s.fragments >= 1 && s.sync_every % s.fragments == 0, "--sync-every " + std::to_string(s.sync_every) +
                                                                   " is not a multiple of --fragments " +
                                                                   std::to_string(s.fragments));
  require(s.delay >= 0 && s.delay < s.sync_every / s.fragments,
          "--fragment-delay must be below --sync-every / --fragments");
  require(s.bits == 4 || s.bits == 8 || s.bits == 16 || s.bits == 32, "--outer-bits must be 4, 8, 16 or 32");
  require(s.powersgd_rank >= 0, "--rank must not be negative");
  require(s.powersgd_rank == 0 || (s.fragments == 1 && s.delay == 0 && s.bits == 32),
          "--compress powersgd with diloco compresses the whole pseudo-gradient at its exchange: leave out "
          "--fragments, --fragment-delay and --outer-bits");
  require(!s.sgp_base || (s.fragments == 1 && s.delay == 0 && s.bits == 32 && s.powersgd_rank == 0),
          "--base sgp is slowmo's: it takes no --fragments, --fragment-delay, --outer-bits or --compress");
}

double quantized_message_bytes(double float_bytes, int64_t bits) {
  if (bits == 32) return float_bytes;
  const double blocks = std::ceil(float_bytes / 4 / kBlockValues);
  return blocks * (kBlockHeaderBytes + kBlockValues * static_cast<double>(bits) / 8);
}

OuterExchangeCost outer_exchange_cost(const ModelProfile& profile, int64_t workers, const ClusterDescription& cluster,
                                      const OuterLoopSettings& s) {
  check_outer_settings(s);
  OuterExchangeCost cost;
  if (s.powersgd_rank > 0) {
    // One worker compresses too (as AR-SGD's PowerSGD), and its allreduces are free.
    const auto step = powersgd_step(profile, s.powersgd_rank);
    cost.compress_seconds = step.error_feedback_seconds + step.matmul_seconds;
    if (workers == 1) return cost;
    const auto ring = cluster.whole_allreduce_cost(workers);
    for (double bytes : {step.uncompressed_bytes, step.p_bytes, step.q_bytes}) {
      if (bytes > 0) cost.first_seconds += ring_allreduce_seconds(ring, workers, bytes);
    }
    return cost;
  }
  if (workers == 1) return cost;
  const double bytes = fragment_bytes(profile, s);
  if (s.bits == 32) {
    cost.first_seconds = ring_allreduce_seconds(cluster.whole_allreduce_cost(workers), workers, bytes);
  } else {
    const double quantized = quantized_message_bytes(bytes, s.bits);
    cost.first_seconds = pairwise_alltoall_seconds(cluster.alltoall_cost(workers), workers, quantized);
    cost.second_seconds = ring_allgather_seconds(cluster.allreduce_cost(workers), workers, quantized);
  }
  return cost;
}

Prediction predict_outer_loop(const ModelProfile& profile, int64_t workers, const ClusterDescription& cluster,
                              const OuterLoopSettings& s) {
  const auto cost = outer_exchange_cost(profile, workers, cluster, s);
  const double compute = compute_seconds(profile);
  const double outer_update = profile.update_seconds_per_byte * fragment_bytes(profile, s);
  // What the `delay` steps of compute after the start do not hide. A quantised exchange's second half starts one
  // step after the first (outer_loop.cpp) and has the remaining delay - 1 steps.
  double exposed = cost.compress_seconds;
  if (s.bits == 32) {
    exposed += std::max(0.0, cost.first_seconds - static_cast<double>(s.delay) * compute);
  } else if (s.delay == 0) {
    exposed += cost.first_seconds + cost.second_seconds;
  } else {
    exposed += std::max(0.0, cost.first_seconds - compute) +
               std::max(0.0, cost.second_seconds - static_cast<double>(s.delay - 1) * compute);
  }
  const double steps_between = static_cast<double>(s.sync_every / s.fragments);
  return prediction_from_iteration(
      profile, workers,
      compute + sgp_step_seconds(profile, workers, cluster, s) + (exposed + outer_update) / steps_between);
}

double outer_bytes_per_step(const ModelProfile& profile, int64_t workers, const OuterLoopSettings& s) {
  check_outer_settings(s);
  if (workers == 1) return 0;
  const double share = static_cast<double>(workers - 1) / static_cast<double>(workers);
  const double bytes = s.powersgd_rank > 0 ? powersgd_exchange_bytes(powersgd_step(profile, s.powersgd_rank))
                                           : quantized_message_bytes(fragment_bytes(profile, s), s.bits);
  const double push = s.sgp_base ? profile.gradient_bytes() : 0;
  return push + 2 * share * bytes / static_cast<double>(s.sync_every / s.fragments);
}

}  // namespace distsgd::sim
