// The discrete-event simulator's clock (spec/simulator.md, "Two fidelities" 2): a min-heap of (time, sequence)
// events. Events at one time run in the order they were scheduled, so a run is deterministic. After the last event
// of each instant the batch hook runs once (the flow network recomputes its rates there, once for every flow that
// started or ended at that instant, rather than once per flow).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

namespace distsgd::sim {

class EventQueue {
 public:
  using Action = std::function<void()>;

  double now() const { return now_; }
  // Runs `action` at `time` (never before now).
  void at(double time, Action action);
  void after(double delay, Action action) { at(now_ + delay, std::move(action)); }

  // Called after the last event of every instant (may schedule more events, also at the same instant).
  void set_batch_hook(Action hook) { batch_hook_ = std::move(hook); }

  // Runs events until none is left or stop() was called.
  void run();
  void stop() { stopped_ = true; }
  int64_t events_run() const { return events_run_; }

 private:
  struct Entry {
    double time;
    uint64_t sequence;
    uint32_t slot;  // into actions_
  };
  static bool later(const Entry& a, const Entry& b) {
    return a.time > b.time || (a.time == b.time && a.sequence > b.sequence);
  }

  std::vector<Entry> heap_;
  std::vector<Action> actions_;  // slots, reused through free_
  std::vector<uint32_t> free_;
  Action batch_hook_;
  double now_ = 0;
  uint64_t next_sequence_ = 0;
  int64_t events_run_ = 0;
  bool stopped_ = false;
};

}  // namespace distsgd::sim
