// Keeps threads that run one at a time (the virtual cluster's actors and its driver: sim/engine/actor_scheduler.hpp)
// on one core. Each hand-over between them wakes a thread; woken on another core it costs an inter-processor
// interrupt and a cold cache, which on this project's 2-core VM took a quarter of a lenet5 virtual run's wall time
// (bench/README, "The virtual cluster on one core"). The core is the one the process was running on when the run
// began; every second or so (review()) it moves to another allowed core when other work crowds the chosen one and
// another is idler (two virtual runs that began on the same core part). Wall time only: the order of a virtual run
// is decided by its event queue, never by which core runs it.
#pragma once
#include <sched.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace distsgd {

class OneCore {
 public:
  // Disabled (every call a no-op) where fewer than two cores are allowed, the affinity cannot be read, or the
  // environment has DISTSGD_ONE_CORE=0 (to compare).
  OneCore();

  // The calling thread's affinity until the guard ends (the driver's: a run in a test process must not leave the
  // test's thread pinned).
  class KeepAffinity {
   public:
    KeepAffinity();
    ~KeepAffinity();
    KeepAffinity(const KeepAffinity&) = delete;
    KeepAffinity& operator=(const KeepAffinity&) = delete;

   private:
    cpu_set_t mask_;
    bool read_;
  };

  // The calling thread moves to the chosen core unless it is there already (`seen`: the thread's own record, 0 at
  // first). Cheap when nothing changed.
  void follow(uint64_t& seen);
  // Every review period: re-chooses the core from /proc/stat's counters over the period (cheap otherwise).
  void review();

  // review()'s rule: given each allowed core's busy share over the period (0-1), the chosen one's index and this
  // process's own share, the index to use next: the idlest other core where the rest of the work on the chosen one
  // exceeds that core's by more than a quarter of a core, else the chosen one.
  static size_t core_after_review(const std::vector<double>& busy, size_t chosen, double own);

  bool enabled() const { return enabled_; }

 private:
  struct Counters {
    std::vector<double> busy, total;  // per allowed core, in /proc/stat's ticks
  };
  bool read_counters(Counters& out) const;

  bool enabled_ = false;
  std::vector<int> allowed_;
  int chosen_ = -1;
  uint64_t generation_ = 1;  // bumped when chosen_ changes
  std::chrono::steady_clock::time_point next_review_;
  std::chrono::milliseconds period_{1000};
  Counters last_;
  double last_process_cpu_ = 0;
  uint64_t calls_ = 0;
};

}  // namespace distsgd
