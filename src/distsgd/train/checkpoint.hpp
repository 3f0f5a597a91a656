// Checkpoints: model parameters and buffers, optimizer state, position in training and RNG state, in one file
// written atomically (to a temporary name, then renamed), so a crash never leaves a half-written checkpoint.
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

// File name of the checkpoint inside a run directory.
std::string checkpoint_path(const std::string& run_dir);

void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);

// Accepts a run directory or a checkpoint file. Throws distsgd::Error when missing or unreadable.
Checkpoint load_checkpoint(const std::string& dir_or_file);

// The trained model's flat parameter vector (parameters.pt in the run directory), loadable with
// torch::load (C++); written atomically.
void save_parameters(const at::Tensor& flat, const std::string& path);
at::Tensor load_parameters(const std::string& path);

at::Tensor cpu_rng_state();
void set_cpu_rng_state(const at::Tensor& state);

}  // namespace distsgd::train
