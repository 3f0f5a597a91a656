// The few things the algorithms' code does besides arithmetic and messages: read the clock, sleep, wait on a
// condition, start a thread. In a real run they are std::chrono::steady_clock, std::condition_variable and
// std::thread. Inside a virtual cluster (spec/virtual-cluster.md) every thread of the run is an actor of one
// scheduler that releases one actor at a time in virtual-time order (SimGrid SMPI's shape): the clock is virtual, a
// wait or a sleep yields to the scheduler, and a new thread is a new actor. Which world a thread is in is a property
// of the thread (the scheduler installs itself for its actors), so the same code serves both, and tests can run real
// and virtual clusters side by side in one process.
#pragma once
#include <chrono>
#include <condition_variable>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace distsgd::runtime {

// What the virtual cluster's scheduler offers the code running on it (sim/engine/actor_scheduler.hpp implements it).
class Executive {
 public:
  virtual ~Executive() = default;
  virtual double now() const = 0;  // virtual seconds since the run began
  // The calling actor resumes at virtual time `seconds` (not before now): compute, sleeps.
  virtual void sleep_until(double seconds) = 0;
  // Computation until virtual time `seconds`: a sleep the scheduler can tell apart (collectives sent meanwhile pay the
  // cluster's interference_alpha_seconds).
  virtual void compute_until(double seconds) { sleep_until(seconds); }
  // The calling actor yields until notify(key) or virtual time `deadline` (infinity: no deadline). `what` names
  // the wait in a deadlock report.
  virtual void block(const void* key, double deadline, const char* what) = 0;
  // Every actor blocked on `key` resumes at the current virtual time.
  virtual void notify(const void* key) = 0;
  // Starts `body` as a new actor at the current virtual time; returns its id.
  virtual int64_t start(std::string name, std::function<void()> body) = 0;
  // Blocks the calling actor until actor `id` has finished.
  virtual void join(int64_t id) = 0;
  // The simulated device's optimizer pass, per byte of parameters (the profile's update_seconds_per_byte).
  virtual double update_seconds_per_byte() const { return 0; }
  // A parameter server's processing of `requests` messages and `bytes` bytes from workers, beyond the update (the
  // simulator's rule for the cluster's server_seconds_per_request and server_seconds_per_byte).
  virtual double server_processing_seconds(double requests, double bytes) const { return 0; }
};

// The executive of the calling thread: null outside a virtual cluster.
Executive* executive();
// Installs `executive` for the calling thread (null to leave); the scheduler does this for its actors and driver.
void set_executive(Executive* executive);

inline constexpr double kNoDeadline = std::numeric_limits<double>::infinity();

}  // namespace distsgd::runtime

namespace distsgd {

// The clock every part of distsgd reads: steady_clock in a real run, the virtual clock inside a virtual cluster
// (its time points count from the virtual run's start). Its time points are steady_clock's, so code written
// against either compiles unchanged.
struct Clock {
  using duration = std::chrono::steady_clock::duration;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::steady_clock::time_point;
  static constexpr bool is_steady = true;
  static time_point now() {
    if (auto* x = runtime::executive()) {
      return time_point(std::chrono::duration_cast<duration>(std::chrono::duration<double>(x->now())));
    }
    return std::chrono::steady_clock::now();
  }
};

}  // namespace distsgd

namespace distsgd::runtime {

inline double seconds_of(Clock::time_point t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

// Sleeps (real) or advances the calling actor's clock (virtual).
inline void sleep_for(double seconds) {
  if (seconds <= 0) return;
  if (auto* x = executive()) {
    x->sleep_until(x->now() + seconds);
    return;
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

// Computation that takes `seconds` on the cluster being simulated: nothing in a real run (the work itself took the
// time), the clock moves on in a virtual one.
inline void spend_compute(double seconds) {
  if (auto* x = executive(); x && seconds > 0) x->compute_until(x->now() + seconds);
}

// The time an optimizer-sized pass over `values` fp32 parameters (an update, a merge, an average) takes on the
// simulated device: 0 in a real run (the pass itself took the time).
inline double parameter_pass_seconds(double values) {
  auto* x = executive();
  return x ? x->update_seconds_per_byte() * 4.0 * values : 0.0;
}
// Spends it on the calling actor's clock (nothing in a real run). Never under a lock another actor takes: it yields.
inline void spend_parameter_pass(double values) { spend_compute(parameter_pass_seconds(values)); }

// A parameter server's processing of `requests` messages and `bytes` bytes received from workers, on the cluster
// being simulated: 0 in a real run. The discrete-event simulator charges the same (DesContext::send_to_server).
inline double server_processing_seconds(double requests, double bytes) {
  auto* x = executive();
  return x ? x->server_processing_seconds(requests, bytes) : 0.0;
}

// std::condition_variable with the same waits, that yields to the scheduler inside a virtual cluster. Callers hold
// `lock` as with std::condition_variable; predicates are checked under it.
class Condition {
 public:
  void notify_all() {
    if (auto* x = executive()) x->notify(this);
    cv_.notify_all();
  }

  template <class Predicate>
  void wait(std::unique_lock<std::mutex>& lock, Predicate done, const char* what = "a condition") {
    if (auto* x = executive()) {
      while (!done()) yield(*x, lock, kNoDeadline, what);
      return;
    }
    cv_.wait(lock, done);
  }

  // Returns done() (false: the deadline passed first).
  template <class Predicate>
  bool wait_until(std::unique_lock<std::mutex>& lock, Clock::time_point deadline, Predicate done,
                  const char* what = "a condition") {
    if (auto* x = executive()) {
      const double until = seconds_of(deadline);
      while (!done()) {
        if (x->now() >= until) return false;
        yield(*x, lock, until, what);
      }
      return true;
    }
    return cv_.wait_until(lock, deadline, done);
  }

  template <class Rep, class Period, class Predicate>
  bool wait_for(std::unique_lock<std::mutex>& lock, std::chrono::duration<Rep, Period> timeout, Predicate done,
                const char* what = "a condition") {
    return wait_until(lock, Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout), done, what);
  }

 private:
  // Only one actor runs at a time, so nothing can notify between the predicate's check and the block.
  void yield(Executive& x, std::unique_lock<std::mutex>& lock, double deadline, const char* what) {
    lock.unlock();
    x.block(this, deadline, what);
    lock.lock();
  }
  std::condition_variable cv_;
};

// std::thread, or an actor of the virtual cluster the starting thread belongs to.
class Thread {
 public:
  Thread() = default;
  Thread(std::string name, std::function<void()> body);
  Thread(Thread&& other) noexcept { *this = std::move(other); }
  Thread& operator=(Thread&& other) noexcept;
  ~Thread();  // a joinable thread is a bug, as with std::thread: terminates

  bool joinable() const { return thread_.joinable() || actor_ >= 0; }
  void join();
  // Leaves the thread to run on (real); an actor is left to its scheduler, which ends it with the run.
  void detach();

 private:
  std::thread thread_;
  Executive* executive_ = nullptr;
  int64_t actor_ = -1;
};

}  // namespace distsgd::runtime
