#include "distsgd/train/progress.hpp"

#include "distsgd/core/log.hpp"

#include <cmath>
#include <iomanip>
#include <sstream>

namespace distsgd::train {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<int64_t>(seconds + 0.5);
  std::ostringstream out;
  if (s >= 3600)
    out << s / 3600 << ':' << std::setw(2) << std::setfill('0') << (s / 60) % 60;
  else
    out << s / 60;
  out << ':' << std::setw(2) << std::setfill('0') << s % 60;
  return out.str();
}

void Progress::maybe_print(const WorkerState& s, int64_t epoch, int64_t step_in_epoch, double loss, double lr) {
  const auto now = std::chrono::steady_clock::now();
  if (!s.leader() || std::chrono::duration<double>(now - last_).count() < s.c.progress_seconds) return;
  last_ = now;
  const double this_run_train = s.position.train_seconds - s.train_seconds_before;
  const double steps_per_second =
      static_cast<double>(s.position.global_step - s.steps_before) / std::max(1e-9, this_run_train);
  double remaining = static_cast<double>(s.step_limit - s.position.global_step) / std::max(1e-9, steps_per_second);
  if (s.c.time_budget > 0) remaining = std::min(remaining, s.c.time_budget - s.wall_now());
  std::ostringstream line;
  line << "epoch " << epoch + 1 << '/' << s.c.epochs << " step " << step_in_epoch << '/' << s.steps_per_epoch
       << std::fixed << std::setprecision(4) << " loss " << loss << " lr " << lr << std::setprecision(0) << ' '
       << steps_per_second * static_cast<double>(s.c.global_batch()) << " samples/s ETA " << format_duration(remaining);
  if (s.c.virtual_cluster) line << " (virtual: " << std::setprecision(2) << s.wall_now() << " s so far)";
  log::info(line.str());
}

}  // namespace distsgd::train
