// A resource that runs one task at a time, in the order the tasks were submitted (spec/simulator.md, "Two
// fidelities" 2: each worker's compute, each server's update under its shard lock, a communication channel).
// Tracks its busy time, for utilisation.
#pragma once
#include <deque>
#include <functional>

#include "distsgd/sim/engine/event_queue.hpp"

namespace distsgd::sim {

class FifoResource {
 public:
  // Called when the task ends, with the time it started (after the tasks before it).
  using Done = std::function<void(double start)>;

  explicit FifoResource(EventQueue& queue) : queue_(&queue) {}

  // How a task's seconds pass once it holds the resource: on the clock by default; a processor shared with other
  // resources (DesContext, ClusterDescription::shared_cores) stretches them. `finished` must run exactly once.
  using Runner = std::function<void(double seconds, std::function<void()> finished)>;
  void run_tasks_with(Runner runner) { runner_ = std::move(runner); }
  // `started` (optional) runs when the task gets the resource (a lock acquired).
  void submit(double seconds, Done done, std::function<void()> started = nullptr);
  // A task that holds the resource without using the processor (a sleep): always `seconds` on the clock.
  void submit_sleep(double seconds, Done done);
  bool busy() const { return busy_; }
  // Whether a task that uses the processor (not a sleep) has held the resource since before now: one started at this
  // very instant does not count, so that the order of simultaneous events cannot decide (a busy host's deliveries).
  bool computing_since_before_now() const { return busy_ && !current_.sleeps && started_ < queue_->now(); }
  // Busy time from the start of the run up to now.
  double busy_seconds() const { return busy_total_ + (busy_ ? queue_->now() - started_ : 0); }

 private:
  struct Task {
    double seconds = 0;
    bool sleeps = false;
    Done done;
    std::function<void()> started;
  };
  void start(Task task);
  void finish();

  EventQueue* queue_;
  Runner runner_;
  std::deque<Task> waiting_;
  Task current_;  // while busy
  bool busy_ = false;
  double started_ = 0;
  double busy_total_ = 0;
};

}  // namespace distsgd::sim
