// What one process's checkpoint holds (train/checkpoint_files.hpp writes and checks the files): model parameters
// and buffers, optimizer state, position in training and RNG state; and the trained model's parameters.pt.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace distsgd::train {

struct TrainingPosition {
  int64_t epoch = 0;          // epoch in progress (0-based)
  int64_t step_in_epoch = 0;  // batches of that epoch already done
  int64_t global_step = 0;
  int64_t samples = 0;  // training samples processed, all workers
  double train_seconds = 0;
  double wall_seconds = 0;
};

struct Checkpoint {
  TrainingPosition position;
  at::Tensor params;    // flat
  at::Tensor momentum;  // flat
  std::vector<at::Tensor> buffers;
  at::Tensor rng_state;  // torch's default CPU generator
  std::string model;     // name, to refuse resuming into another model
};

// The trained model's flat parameter vector (parameters.pt in the run directory), loadable with
// torch::load (C++); written atomically.
void save_parameters(const at::Tensor& flat, const std::string& path);
at::Tensor load_parameters(const std::string& path);

at::Tensor cpu_rng_state();
void set_cpu_rng_state(const at::Tensor& state);

}  // namespace distsgd::train
