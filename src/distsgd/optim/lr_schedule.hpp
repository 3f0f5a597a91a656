// Learning rate per step: linear scaling with the global batch, linear warm-up, step decay (Goyal et al. 2017).
#pragma once
#include <cstdint>
#include <vector>

namespace distsgd::optim {

struct LrSchedule {
  double base_lr = 0.05;
  double scale = 1;  // global_batch / 256 with --lr-scaling linear, else 1
  double warmup_epochs = 0;
  std::vector<double> decay_epochs;  // multiply by decay_factor from the start of each
  double decay_factor = 0.1;

  // Learning rate of global step `step` (0-based, in iterations of one worker).
  // Warm-up ramps linearly from target/warmup_steps at step 0 to the target at the end of warm-up.
  double at(int64_t step, int64_t steps_per_epoch) const;
};

}  // namespace distsgd::optim
