// PowerSGD on AR-SGD (distsgd train --algo arsgd --compress powersgd; algo/allreduce/powersgd_allreduce.cpp) in the
// simulator. After backward each worker runs, one after the other (each waits for the one before):
//   compress   the error feedback (a pass over the gradient, charged as an update, as DGC's compression is) and the
//              first product P = M Q
//   allreduce  the uncompressed tensors (vectors and small matrices), when there are any
//   allreduce  every P: sum over compressed matrices of n r floats
//   compress   orthonormalise P, Q = M^T P
//   allreduce  every Q: sum over compressed matrices of m r floats
//   compress   the approximation P Q^T; then the update
// Which tensors are compressed, and at which rank, is core/powersgd_plan.hpp's rule over the profile's tensor shapes
// (a profile without shapes is refused). The three products cost 2 n m r FLOPs each, at the profile's
// matmul_flops_per_second; a profile without that rate charges them nothing. The analytical form is the steady
// state, from --powersgd-start on:
//   t_iter = t_f + t_b + t_ef + t_mm + AR(unc) + AR(P) + AR(Q) + t_u
// with AR the ring allreduce of spec/simulator.md ("Communication costs") and AR(0) = 0.
#pragma once
#include <cstdint>

#include "distsgd/core/powersgd_plan.hpp"
#include "distsgd/sim/analytical/collective_costs.hpp"
#include "distsgd/sim/analytical/prediction.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "distsgd/sim/platform/model_profile.hpp"

namespace distsgd::sim {

// One compressed step of one worker.
struct PowerSgdStep {
  double uncompressed_bytes = 0;  // the first allreduce's message
  double p_bytes = 0;             // the second's
  double q_bytes = 0;             // the third's
  double error_feedback_seconds = 0;
  double matmul_seconds = 0;  // all three products; 0 without a rate in the profile
};

// The plan over the profile's tensors; throws Error when a tensor has no shape (profiles written before distsgd
// profile recorded shapes: profile the model again).
PowerSgdPlan powersgd_plan(const ModelProfile& profile, int64_t rank, double min_compression_rate = 2);
PowerSgdStep powersgd_step(const ModelProfile& profile, int64_t rank, double min_compression_rate = 2);

// The analytical prediction above over a ring with cost `ring` (one worker: the same compute, no allreduce).
Prediction predict_powersgd(const ModelProfile& profile, int64_t workers, int64_t rank, const LinkCost& ring);
Prediction predict_powersgd(const ModelProfile& profile, int64_t workers, int64_t rank,
                            const ClusterDescription& cluster);

}  // namespace distsgd::sim
