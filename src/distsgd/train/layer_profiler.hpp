// Measures a model on its real data for the performance model (spec/simulator.md, "Inputs"): per parameter tensor,
// in forward order, its forward and backward time at the run's batch size; the data time; the update cost per byte.
// Repeated and reduced to medians and interquartile ranges (the host is noisy; the median resists outliers). On a
// loaded host every iteration loses a slice somewhere, so the sum of the per-tensor medians (each mostly clean) comes
// out below the median of whole iterations, near their minimum.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "distsgd/core/config.hpp"

namespace distsgd::train {

struct Spread {
  double median = 0;
  double iqr = 0;  // 75th - 25th percentile
  double min = 0;  // the least disturbed repeat
};

struct MeasuredTensor {
  std::string name;
  int64_t parameters = 0;
  std::vector<int64_t> shape{};
  Spread forward;   // the time of the block the tensor belongs to, shared among its tensors by parameter count
  Spread backward;  // from when every later tensor's gradient was ready to when this one's was
};

struct MeasuredProfile {
  std::string model;
  std::vector<int64_t> input_shape;  // one sample, C, H, W: the dataset's
  int64_t batch_size = 0;
  int64_t threads = 0;
  int64_t repeats = 0;
  bool per_block_forward = false;  // false: the model has no block gates (TorchScript); forward split by size
  Spread data;                     // one batch: slicing, normalizing, labels
  Spread iteration;                // forward + loss + backward, measured whole (checks the per-tensor sums)
  double update_seconds_per_byte = 0;
  // Of the thin products gradient compression runs (PowerSGD's M Q at rank 4 on the largest matrix); 0: no matrix.
  double matmul_flops_per_second = 0;
  std::vector<MeasuredTensor> tensors;
};

// Runs `warmup` untimed and `repeats` timed iterations of forward and backward on batches of the configured
// dataset, one process, config.threads threads (0: every core).
MeasuredProfile measure_profile(const TrainConfig& config, int64_t repeats, int64_t warmup = 3);

}  // namespace distsgd::train
