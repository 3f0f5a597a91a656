// The progress line worker 0 prints every --progress-seconds: epoch, step, loss, learning rate, samples/s, ETA.
#pragma once
#include "distsgd/train/worker_state.hpp"

#include <chrono>

namespace distsgd::train {

class Progress {
 public:
  // Prints a line if this is worker 0 and the interval has passed since the last one.
  void maybe_print(const WorkerState& s, int64_t epoch, int64_t step_in_epoch, double loss, double lr);

 private:
  // On the real clock, also in a virtual run: the line is for the person waiting (its figures are virtual).
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// "1:02:03", "2:05", or "?" for an unknown duration.
std::string format_duration(double seconds);

}  // namespace distsgd::train
