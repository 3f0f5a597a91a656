// Analytical predictions (spec/simulator.md, "Two fidelities" 1 and "Per-algorithm models") for the synchronous
// algorithms, from a model profile: AR-SGD without overlap and with wait-free backprop over gradient buckets, and
// BSP over S parameter-server shards.
#pragma once
#include <cstdint>

#include "distsgd/sim/cluster_description.hpp"
#include "distsgd/sim/collective_costs.hpp"
#include "distsgd/sim/model_profile.hpp"
#include "distsgd/sim/prediction.hpp"

namespace distsgd::sim {

// Gradient buckets as AR-SGD forms them: filled in backward order (last tensor first), the first up to
// `first_bucket_bytes`, the others up to `bucket_bytes`; a tensor larger than a bucket is a bucket of its own.
// Each bucket is reduced when its last gradient is ready. bucket_bytes <= 0: one bucket per tensor.
struct AllreduceSettings {
  bool wait_free = true;  // false: one allreduce of the whole gradient after the backward pass (--overlap none)
  double bucket_bytes = 25e6;
  double first_bucket_bytes = 1e6;
};

Prediction predict_allreduce_sgd(const ModelProfile& profile, int64_t workers, const LinkCost& allreduce,
                                 const AllreduceSettings& settings);

// BSP: every worker pushes m/S to each of S shards (incast P*m/S at each), the shards aggregate P*(m/S)*gamma and
// update, the workers pull m/S from each.
Prediction predict_bsp(const ModelProfile& profile, int64_t workers, int64_t servers,
                       const ClusterDescription& cluster);

}  // namespace distsgd::sim
