// Wall-clock helpers (virtual time inside a virtual cluster: core/runtime.hpp's Clock).
#pragma once
#include "distsgd/core/runtime.hpp"

#include <chrono>

namespace distsgd {

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Accumulates the time spent in repeated intervals (e.g. forward passes).
class Stopwatch {
 public:
  void start() { started_ = Clock::now(); }
  double stop() {
    double s = seconds_since(started_);
    total_ += s;
    return s;
  }
  double total() const { return total_; }
  void reset() { total_ = 0; }

 private:
  Clock::time_point started_{};
  double total_ = 0;
};

}  // namespace distsgd
