// A model's measured (or analytical) profile, the simulator's first input (spec/simulator.md, "Inputs and
// outputs"): per parameter tensor, in forward order, its size and its forward and backward times at a batch size;
// the data time and the update cost per byte. Read from JSON:
//   {"model": "lenet5", "batch_size": 64, "data_seconds": 1e-4, "h2d_seconds": 0,
//    "update_seconds_per_byte": 2e-10, "bytes_per_parameter": 4, "matmul_flops_per_second": 1e10,
//    "tensors": [{"name": "conv1.weight", "parameters": 150, "forward_seconds": 1e-4, "backward_seconds": 2e-4,
//                 "shape": [6, 1, 5, 5]}, ...]}
// "shape" (what PowerSGD's model needs) and "matmul_flops_per_second" (the products of PowerSGD's compression) are
// optional: profiles written before they were recorded have neither.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "distsgd/sim/analytical/dag_model.hpp"

namespace distsgd::sim {

struct TensorProfile {
  std::string name;
  int64_t parameters = 0;
  double forward_seconds = 0;
  double backward_seconds = 0;
  std::vector<int64_t> shape{};  // empty: not recorded
};

struct ModelProfile {
  std::string model;
  // One sample's C, H, W (the compute scales with it); empty: not recorded (profiles written before it was).
  std::vector<int64_t> input_shape;
  int64_t batch_size = 0;
  double data_seconds = 0;  // reading and preparing one batch (t_io)
  double h2d_seconds = 0;   // host-to-device copy (t_h2d); 0 on CPU
  double update_seconds_per_byte = 0;
  int64_t bytes_per_parameter = 4;
  double matmul_flops_per_second = 0;  // of the products of gradient compression; 0: not known
  std::vector<TensorProfile> tensors;  // forward order

  double gradient_bytes() const;
  double forward_seconds() const;
  double backward_seconds() const;
  // The DAG model's inputs, each tensor a layer whose communication time `comm_seconds(bytes)` gives.
  template <class CommSeconds>
  IterationInputs iteration_inputs(CommSeconds comm_seconds) const {
    IterationInputs in;
    for (const auto& t : tensors) {
      const double bytes = static_cast<double>(t.parameters * bytes_per_parameter);
      in.layers.push_back({t.forward_seconds, t.backward_seconds, comm_seconds(bytes)});
    }
    in.io = data_seconds;
    in.h2d = h2d_seconds;
    in.update = update_seconds_per_byte * gradient_bytes();
    return in;
  }
};

// Throws Error naming `source` (the file), the field and what was expected, e.g.
// "profile.json: tensors[2].backward_seconds: expected a non-negative number, got \"fast\"".
ModelProfile model_profile_from_json(const nlohmann::json& json, const std::string& source);
ModelProfile load_model_profile(const std::string& path);
nlohmann::json to_json(const ModelProfile& profile);

}  // namespace distsgd::sim
