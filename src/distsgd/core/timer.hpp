// Wall-clock helpers (virtual time inside a virtual cluster: core/runtime.hpp's Clock).
#pragma once
#include "distsgd/core/runtime.hpp"

#include <sys/resource.h>

#include <chrono>
#include <ctime>

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

// The CPU this process has used, all its threads, user and system, in seconds: where a rank is a process, its
// compute and the work of its communication threads beside it.
inline double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

// The CPU the calling thread has used, user and system, in seconds: a rank's training thread without its
// communication and loader threads.
inline double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// The process's CPU over repeated intervals, as Stopwatch accumulates their wall time, and of it the CPU of the
// thread that starts and stops it.
class CpuStopwatch {
 public:
  void start() {
    started_ = process_cpu_seconds();
    thread_started_ = thread_cpu_seconds();
  }
  void stop() {
    total_ += process_cpu_seconds() - started_;
    thread_total_ += thread_cpu_seconds() - thread_started_;
  }
  double total() const { return total_; }
  double thread_total() const { return thread_total_; }

 private:
  double started_ = 0, total_ = 0;
  double thread_started_ = 0, thread_total_ = 0;
};

}  // namespace distsgd
