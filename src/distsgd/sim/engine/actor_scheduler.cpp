#include "distsgd/sim/engine/actor_scheduler.hpp"

#include <cmath>
#include <exception>

#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"

namespace distsgd::sim {

ActorScheduler::ActorScheduler(EventQueue& queue) : queue_(queue) {}

ActorScheduler::~ActorScheduler() {
  for (auto& actor : actors_) {
    if (!actor->thread.joinable()) continue;
    if (actor->finished) {
      actor->thread.join();
    } else {
      // Blocked for ever (after an error, or never released): its thread waits on the actor, so both stay.
      actor->thread.detach();
      actor.release();
    }
  }
}

ActorScheduler::Actor& ActorScheduler::running() {
  require(running_ >= 0, "virtual cluster: only an actor can wait or sleep (an event handler tried to)");
  return *actors_[static_cast<size_t>(running_)];
}

int64_t ActorScheduler::start(std::string name, std::function<void()> body) {
  const auto id = static_cast<int64_t>(actors_.size());
  actors_.push_back(std::make_unique<Actor>());
  Actor* actor = actors_.back().get();
  // A thread an actor starts is named after it ("worker 2/receiver of shard 0").
  actor->name = running_ >= 0 ? actors_[static_cast<size_t>(running_)]->name + "/" + name : std::move(name);
  actor->thread = std::thread([this, actor, body = std::move(body)] {
    runtime::set_executive(this);
    {
      std::unique_lock<std::mutex> lock(mutex_);
      actor->go_signal.wait(lock, [&] { return actor->go; });
      actor->go = false;
    }
    one_core_.follow(actor->core_seen);
    try {
      body();
    } catch (const std::exception& e) {
      if (error_.empty()) error_ = actor->name + ": " + e.what();
      queue_.stop();
    } catch (...) {
      if (error_.empty()) error_ = actor->name + ": an unknown exception";
      queue_.stop();
    }
    actor->finished = true;
    notify(actor);  // its joiners
    // The last actor's end is the run's: what is left in the queue (deadlines of waits a notify ended, messages
    // nobody will read) must not move the clock past it.
    if (++finished_ == static_cast<int64_t>(actors_.size())) queue_.stop();
    std::lock_guard<std::mutex> lock(mutex_);
    driver_go_ = true;
    driver_signal_.notify_one();
  });
  schedule_resume(id, queue_.now());
  return id;
}

void ActorScheduler::schedule_resume(int64_t id, double time) {
  queue_.at(time, [this, id] { resume(id); });
}

void ActorScheduler::resume(int64_t id) {
  Actor& actor = *actors_[static_cast<size_t>(id)];
  if (actor.finished) return;
  one_core_.review();
  one_core_.follow(driver_core_seen_);
  running_ = id;
  std::unique_lock<std::mutex> lock(mutex_);
  actor.go = true;
  actor.go_signal.notify_one();
  driver_signal_.wait(lock, [&] { return driver_go_; });
  driver_go_ = false;
  running_ = -1;
}

void ActorScheduler::yield() {
  Actor& actor = running();
  const int64_t id = running_;
  std::unique_lock<std::mutex> lock(mutex_);
  driver_go_ = true;
  driver_signal_.notify_one();
  actor.go_signal.wait(lock, [&] { return actor.go; });
  actor.go = false;
  running_ = id;
  lock.unlock();
  one_core_.follow(actor.core_seen);
}

void ActorScheduler::sleep_until(double seconds) {
  const int64_t id = running_;
  running();  // checks that an actor calls
  schedule_resume(id, std::max(seconds, queue_.now()));
  yield();
}

void ActorScheduler::compute_until(double seconds) {
  Actor& actor = running();
  if (actor.computing_until < queue_.now()) actor.computing_since = queue_.now();  // not a continuation
  actor.computing_until = std::max(seconds, queue_.now());
  sleep_until(seconds);
}

void ActorScheduler::block(const void* key, double deadline, const char* what) {
  Actor& actor = running();
  const int64_t id = running_;
  actor.what = what;
  const uint64_t token = ++actor.wake_token;
  blocked_.emplace(key, id);
  if (std::isfinite(deadline)) {
    queue_.at(std::max(deadline, queue_.now()), [this, id, key, token] {
      Actor& a = *actors_[static_cast<size_t>(id)];
      if (a.wake_token != token) return;  // woken by a notify since
      for (auto [it, end] = blocked_.equal_range(key); it != end; ++it) {
        if (it->second == id) {
          blocked_.erase(it);
          break;
        }
      }
      ++a.wake_token;
      resume(id);
    });
  }
  yield();
}

void ActorScheduler::notify(const void* key) {
  auto [begin, end] = blocked_.equal_range(key);
  for (auto it = begin; it != end; ++it) {
    Actor& actor = *actors_[static_cast<size_t>(it->second)];
    ++actor.wake_token;
    schedule_resume(it->second, queue_.now());
  }
  blocked_.erase(begin, end);
}

void ActorScheduler::join(int64_t id) {
  Actor& actor = *actors_[static_cast<size_t>(id)];
  while (!actor.finished) block(&actor, runtime::kNoDeadline, "the end of a thread it started");
  if (actor.thread.joinable()) actor.thread.join();
}

void ActorScheduler::run() {
  runtime::Executive* outside = runtime::executive();
  runtime::set_executive(this);      // events read the virtual clock too
  const OneCore::KeepAffinity keep;  // the caller's thread is not left on the actors' core
  try {
    queue_.run();
  } catch (...) {
    runtime::set_executive(outside);
    throw;
  }
  runtime::set_executive(outside);
  if (!error_.empty()) throw Error(error_);
  std::vector<std::string> stuck;
  for (const auto& actor : actors_) {
    if (actor->finished) continue;
    stuck.push_back(actor->name + " waits for " + (actor->what ? actor->what : "its first turn"));
  }
  require(stuck.empty(), "virtual cluster: deadlock at " + std::to_string(queue_.now()) +
                             " virtual s, with nothing left to wake: " + distsgd::join(stuck, "; "));
}

}  // namespace distsgd::sim
