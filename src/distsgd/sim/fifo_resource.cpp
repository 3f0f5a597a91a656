#include "distsgd/sim/fifo_resource.hpp"

#include "distsgd/core/error.hpp"

namespace distsgd::sim {

void FifoResource::submit(double seconds, Done done, std::function<void()> started) {
  require(seconds >= 0, "simulator: a task cannot take negative time");
  waiting_.push_back({seconds, std::move(done), std::move(started)});
  if (!busy_) start_next();
}

void FifoResource::start_next() {
  Task task = std::move(waiting_.front());
  waiting_.pop_front();
  busy_ = true;
  started_ = queue_->now();
  queue_->after(task.seconds, [this, start = started_, done = std::move(task.done)] {
    busy_total_ += queue_->now() - start;
    busy_ = false;
    // The next task starts before this one's continuation runs: what it submits queues behind.
    if (!waiting_.empty()) start_next();
    if (done) done(start);
  });
  if (task.started) task.started();
}

}  // namespace distsgd::sim
