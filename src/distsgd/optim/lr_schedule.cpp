#include "distsgd/optim/lr_schedule.hpp"

#include <algorithm>

namespace distsgd::optim {

double LrSchedule::at(int64_t step, int64_t steps_per_epoch) const {
  double lr = base_lr * scale;
  const double epoch = static_cast<double>(step) / static_cast<double>(steps_per_epoch);
  for (double d : decay_epochs) {
    if (epoch >= d) lr *= decay_factor;
  }
  const double warmup_steps = warmup_epochs * static_cast<double>(steps_per_epoch);
  if (warmup_steps > 0 && step < warmup_steps) {
    const double start = std::clamp(warmup_start_fraction, 0.0, 1.0);
    lr *= start + (1 - start) * static_cast<double>(step) / warmup_steps;
  }
  return lr;
}

double warmup_start_fraction(bool linear_scaling, int64_t global_batch, int64_t workers) {
  const double k = linear_scaling ? static_cast<double>(global_batch) / 256.0 : static_cast<double>(workers);
  return k > 1 ? 1 / k : 1.0;
}

}  // namespace distsgd::optim
