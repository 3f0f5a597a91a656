// A model's operations counted for the simulator's analytical profiles (distsgd profile --device, and a virtual
// run's --profile DEVICE).
#pragma once
#include "distsgd/core/config.hpp"
#include "distsgd/sim/platform/analytical_profile.hpp"

#include <cstdint>
#include <vector>

namespace distsgd::train {

// The FLOPs and bytes of `config`'s model (models/operation_costs.hpp) at `input_shape` (CxHxW) and `classes`, as
// the simulator's plain ModelCost. With --dataset text the sample is one sequence of --context bytes (input_shape and
// classes are not read).
sim::ModelCost count_model_cost(const TrainConfig& config, const std::vector<int64_t>& input_shape, int64_t classes);

}  // namespace distsgd::train
