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
    lr *= std::min(1.0, static_cast<double>(step + 1) / warmup_steps);
  }
  return lr;
}

}  // namespace distsgd::optim
