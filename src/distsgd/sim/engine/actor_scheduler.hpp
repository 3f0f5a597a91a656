// The virtual cluster's scheduler (spec/virtual-cluster.md; SimGrid SMPI's shape): every worker and server of a
// virtual run, and every thread they start, is an actor, a real thread that runs only when the scheduler releases
// it, one at a time, in virtual-time order. An actor runs until it sleeps (compute), blocks (a wait on a message or
// a condition) or ends; then the scheduler takes the next event of its queue (a delivery, a wake-up) at the
// smallest virtual time, ties in the order they were scheduled. Nothing reads the wall clock and no two actors run
// at once, so a run is the same, bit for bit, every time.
// Events run on the driver, the thread that called run(); an actor runs inside the event that released it, so it
// may schedule events (a send's delivery) on the same queue.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "distsgd/core/one_core.hpp"
#include "distsgd/core/runtime.hpp"
#include "distsgd/sim/engine/event_queue.hpp"

namespace distsgd::sim {

class ActorScheduler final : public runtime::Executive {
 public:
  explicit ActorScheduler(EventQueue& queue);
  ~ActorScheduler() override;
  ActorScheduler(const ActorScheduler&) = delete;
  ActorScheduler& operator=(const ActorScheduler&) = delete;

  // Runs the queue until every actor has ended (the clock stays at the last one's end) or no event is left. Throws
  // Error with the first actor's error, or on a deadlock (actors blocked with nothing left to wake them), naming each
  // blocked actor and its wait. After an error the actors still blocked are left where they are (their threads end with
  // the process).
  void run();

  // runtime::Executive: start() may be called before run() (the run's processes) or by an actor.
  double now() const override { return queue_.now(); }
  void sleep_until(double seconds) override;
  void compute_until(double seconds) override;
  // Whether actor `id` is in a compute (runtime::spend_compute) at the current virtual time.
  bool computing(int64_t id) const { return queue_.now() < actors_[static_cast<size_t>(id)]->computing_until; }
  // The same, for a compute that began before now: one that begins at this very instant does not count, so that the
  // order of simultaneous events cannot decide (a busy host's deliveries; FifoResource::computing_since_before_now).
  bool computing_since_before_now(int64_t id) const {
    const Actor& actor = *actors_[static_cast<size_t>(id)];
    return actor.computing_since < queue_.now() && queue_.now() < actor.computing_until;
  }
  void block(const void* key, double deadline, const char* what) override;
  void notify(const void* key) override;
  int64_t start(std::string name, std::function<void()> body) override;
  void join(int64_t id) override;
  double update_seconds_per_byte() const override { return update_seconds_per_byte_; }
  void set_update_seconds_per_byte(double seconds) { update_seconds_per_byte_ = seconds; }
  double server_processing_seconds(double requests, double bytes) const override {
    return server_processing_ ? server_processing_(requests, bytes) : 0.0;
  }
  // The cluster's rule (sim::server_processing_seconds of its description), which the DES charges too.
  void set_server_processing(std::function<double(double, double)> seconds) { server_processing_ = std::move(seconds); }

  int64_t actors_started() const { return static_cast<int64_t>(actors_.size()); }
  EventQueue& queue() { return queue_; }

 private:
  struct Actor {
    std::string name;
    std::thread thread;
    std::condition_variable go_signal;
    bool go = false;
    bool finished = false;
    const char* what = nullptr;  // what it waits for (the deadlock report)
    uint64_t wake_token = 0;     // bumped on every wake: a stale deadline event finds it changed
    double computing_until = 0;  // the end of its last compute
    double computing_since = 0;  // the start of its last compute (of the last run of back-to-back ones)
    uint64_t core_seen = 0;      // OneCore::follow's record
  };

  void resume(int64_t id);  // driver: run actor `id` until it yields
  void yield();             // the running actor: give control back to the driver and wait for the next go
  void schedule_resume(int64_t id, double time);
  Actor& running();

  EventQueue& queue_;
  std::mutex mutex_;  // guards the go flags (the hand-over); everything else is touched by one thread at a time
  std::condition_variable driver_signal_;
  bool driver_go_ = false;
  std::vector<std::unique_ptr<Actor>> actors_;
  std::multimap<const void*, int64_t> blocked_;  // key -> actors waiting on it
  int64_t running_ = -1;
  int64_t finished_ = 0;  // actors that have ended
  double update_seconds_per_byte_ = 0;
  std::function<double(double, double)> server_processing_;
  std::string error_;
  OneCore one_core_;  // the driver and the actors take turns on one core (wall time only)
  uint64_t driver_core_seen_ = 0;
};

}  // namespace distsgd::sim
