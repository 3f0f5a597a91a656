#include "distsgd/sim/engine/fifo_resource.hpp"

#include "distsgd/core/error.hpp"

namespace distsgd::sim {

void FifoResource::submit(double seconds, Done done, std::function<void()> started) {
  require(seconds >= 0, "simulator: a task cannot take negative time");
  Task task{seconds, false, std::move(done), std::move(started)};
  if (busy_) {
    waiting_.push_back(std::move(task));
  } else {
    start(std::move(task));
  }
}

void FifoResource::submit_sleep(double seconds, Done done) {
  require(seconds >= 0, "simulator: a task cannot take negative time");
  Task task{seconds, true, std::move(done), nullptr};
  if (busy_) {
    waiting_.push_back(std::move(task));
  } else {
    start(std::move(task));
  }
}

void FifoResource::start(Task task) {
  current_ = std::move(task);
  busy_ = true;
  started_ = queue_->now();
  if (runner_ && !current_.sleeps && current_.seconds > 0) {
    runner_(current_.seconds, [this] { finish(); });
  } else {
    queue_->after(current_.seconds, [this] { finish(); });  // small enough for std::function's own buffer
  }
  if (current_.started) {
    auto started = std::move(current_.started);
    current_.started = nullptr;
    started();
  }
}

void FifoResource::finish() {
  Done done = std::move(current_.done);
  current_.done = nullptr;
  const double start_time = started_;
  busy_total_ += queue_->now() - start_time;
  busy_ = false;
  // The next task starts before this one's continuation runs: what that submits queues behind it.
  if (!waiting_.empty()) {
    Task next = std::move(waiting_.front());
    waiting_.pop_front();
    start(std::move(next));
  }
  if (done) done(start_time);
}

}  // namespace distsgd::sim
