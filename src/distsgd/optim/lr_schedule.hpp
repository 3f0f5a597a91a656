// Learning rate per step: linear scaling with the global batch, gradual warm-up, step decay (Goyal et al. 2017,
// "Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour", sections 2.1-2.2).
#pragma once
#include <cstdint>
#include <vector>

namespace distsgd::optim {

struct LrSchedule {
  double base_lr = 0.05;
  double scale = 1;  // global_batch / 256 with --lr-scaling linear, else 1
  double warmup_epochs = 0;
  // Where warm-up starts, as a fraction of the target: 1/k for a target k times the small-batch rate. Goyal et al.
  // start from that rate eta and reach k*eta at the end of warm-up ("gradual warmup", section 2.2).
  double warmup_start_fraction = 1;
  std::vector<double> decay_epochs;  // multiply by decay_factor from the start of each
  double decay_factor = 0.1;

  // Learning rate of global step `step` (0-based, in iterations of one worker).
  // Warm-up adds the same amount each step, from warmup_start_fraction * target at step 0 to the target at the
  // first step after warm-up.
  double at(int64_t step, int64_t steps_per_epoch) const;
};

// Goyal et al.'s k, the factor between the run's learning rate and the small-batch one it scales: global batch / 256
// under linear scaling, else the number of workers (each adds one worker's minibatch). Warm-up starts at 1/k of
// the target; with k <= 1 there is nothing to ramp up from.
double warmup_start_fraction(bool linear_scaling, int64_t global_batch, int64_t workers);

}  // namespace distsgd::optim
