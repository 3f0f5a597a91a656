#include "distsgd/sim/analytical/powersgd_model.hpp"

#include "distsgd/core/error.hpp"

namespace distsgd::sim {

PowerSgdPlan powersgd_plan(const ModelProfile& profile, int64_t rank, double min_compression_rate) {
  require(rank >= 1, "--rank must be at least 1 (got " + std::to_string(rank) + ")");
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& t : profile.tensors) {
    if (t.shape.empty() && t.parameters == 1) {  // a scalar: its shape is [] and not recorded
      shapes.push_back({1});
      continue;
    }
    require(!t.shape.empty(), "--compress powersgd needs each tensor's shape, and the profile of " + profile.model +
                                  " has none for " + (t.name.empty() ? std::string("a tensor") : t.name) +
                                  " (written before distsgd profile recorded shapes): profile the model again");
    shapes.push_back(t.shape);
  }
  return plan_powersgd(shapes, rank, min_compression_rate);
}

PowerSgdStep powersgd_step(const ModelProfile& profile, int64_t rank, double min_compression_rate) {
  const auto plan = powersgd_plan(profile, rank, min_compression_rate);
  const double bytes_per_float = static_cast<double>(profile.bytes_per_parameter);
  PowerSgdStep step;
  step.uncompressed_bytes = bytes_per_float * static_cast<double>(plan.uncompressed_floats);
  step.p_bytes = bytes_per_float * static_cast<double>(plan.p_floats);
  step.q_bytes = bytes_per_float * static_cast<double>(plan.q_floats);
  step.error_feedback_seconds = profile.update_seconds_per_byte * profile.gradient_bytes();
  if (profile.matmul_flops_per_second > 0) step.matmul_seconds = plan.matmul_flops() / profile.matmul_flops_per_second;
  return step;
}

Prediction predict_powersgd(const ModelProfile& profile, int64_t workers, int64_t rank, const LinkCost& ring) {
  require(workers >= 1, "AR-SGD needs at least one worker");
  const auto step = powersgd_step(profile, rank);
  const double update = profile.update_seconds_per_byte * profile.gradient_bytes();
  // One worker compresses too (the real code does), and its allreduces are free.
  const auto allreduce = [&](double bytes) {
    return bytes > 0 && workers > 1 ? ring_allreduce_seconds(ring, workers, bytes) : 0;
  };
  const double iteration = profile.forward_seconds() + profile.backward_seconds() + step.error_feedback_seconds +
                           step.matmul_seconds + allreduce(step.uncompressed_bytes) + allreduce(step.p_bytes) +
                           allreduce(step.q_bytes) + update;
  return prediction_from_iteration(profile, workers, iteration);
}

Prediction predict_powersgd(const ModelProfile& profile, int64_t workers, int64_t rank,
                            const ClusterDescription& cluster) {
  return predict_powersgd(profile, workers, rank, cluster.whole_allreduce_cost(workers));
}

}  // namespace distsgd::sim
