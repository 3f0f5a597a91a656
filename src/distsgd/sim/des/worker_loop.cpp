#include "distsgd/sim/des/worker_loop.hpp"

#include <algorithm>

#include "distsgd/sim/platform/start_phases.hpp"

namespace distsgd::sim {

WorkerLoops::WorkerLoops(DesContext& context, Workload& workload, std::function<void(int64_t, int64_t)> on_iteration)
    : context_(context),
      workload_(workload),
      on_iteration_(std::move(on_iteration)),
      buckets_(workload.watched_buckets()),
      forward_seconds_(context.profile.forward_seconds()),
      backward_seconds_(context.profile.backward_seconds()),
      read_seconds_(context.profile.data_seconds + context.profile.h2d_seconds),
      states_(static_cast<size_t>(context.workers)) {
  if (buckets_) {
    for (size_t b = 0; b < buckets_->size(); ++b) {
      double forward = 0, backward = 0;
      for (size_t t = buckets_->first[b]; t <= buckets_->last[b]; ++t) {
        forward += context.profile.tensors[t].forward_seconds;
        backward += context.profile.tensors[t].backward_seconds;
      }
      bucket_forward_.push_back(forward);
      bucket_backward_.push_back(backward);
    }
  }
}

void WorkerLoops::start() {
  for (int64_t w = 0; w < context_.workers; ++w) {
    const double start = first_iteration_start_seconds(context_.settings.algorithm, context_.profile, context_.cluster,
                                                       w, context_.workers);
    if (start > 0) {
      context_.sleep(w, "start", start, [this, w] { start_iteration(w); });
    } else {
      start_iteration(w);
    }
  }
}

void WorkerLoops::start_iteration(int64_t worker) {
  if (context_.iteration[static_cast<size_t>(worker)] == total_iterations()) {
    workload_.worker_finished(worker);
    return;
  }
  states_[static_cast<size_t>(worker)].factor =
      context_.variability[static_cast<size_t>(worker)].next_iteration_factor();
  take_batch(worker);
}

void WorkerLoops::take_batch(int64_t worker) {
  const int64_t step = context_.iteration[static_cast<size_t>(worker)];
  const auto go_on = [this, worker, step] {
    workload_.before_forward(worker, step, [this, worker] { forward(worker); });
  };
  const int64_t prefetch = context_.settings.prefetch;
  if (prefetch == 0) {  // the batch is read when asked for, on the training thread
    context_.run(worker, "data", read_seconds_, go_on);
    return;
  }
  // The loader thread reads batches one after another, each once a slot of its queue of `prefetch` is free (the batch
  // `prefetch` before it was taken).
  Loader& loader = states_[static_cast<size_t>(worker)].loader;
  const double slot_free = static_cast<int64_t>(loader.taken.size()) < prefetch ? 0.0 : loader.taken.front();
  loader.ready = std::max(loader.ready, slot_free) + read_seconds_;
  const double now = context_.queue.now();
  const double taken = std::max(now, loader.ready);
  loader.taken.push_back(taken);
  if (static_cast<int64_t>(loader.taken.size()) > prefetch) loader.taken.pop_front();
  context_.queue.at(taken, [this, worker, now, go_on] {
    context_.span(worker, "data", now);
    go_on();
  });
}

void WorkerLoops::forward(int64_t worker) {
  State& s = states_[static_cast<size_t>(worker)];
  s.compute_start = s.phase_start = context_.queue.now();
  if (workload_.gates_forward() && buckets_) {
    forward_bucket(worker, buckets_->size());
    return;
  }
  context_.run(worker, nullptr, forward_seconds_ * s.factor, [this, worker] { forward_bucket(worker, 0); });
}

// Runs the forward of the buckets before `remaining` (input side first: the highest index), each after its gate.
void WorkerLoops::forward_bucket(int64_t worker, size_t remaining) {
  State& s = states_[static_cast<size_t>(worker)];
  if (remaining == 0) {
    context_.span(worker, "forward", s.phase_start);
    const int64_t step = context_.iteration[static_cast<size_t>(worker)];
    workload_.before_backward(worker, step, [this, worker] { backward(worker); });
    return;
  }
  const size_t b = remaining - 1;
  workload_.forward_gate(worker, b, [this, worker, b] {
    context_.run(worker, nullptr, bucket_forward_[b] * states_[static_cast<size_t>(worker)].factor,
                 [this, worker, b] { forward_bucket(worker, b); });
  });
}

void WorkerLoops::backward(int64_t worker) {
  State& s = states_[static_cast<size_t>(worker)];
  s.phase_start = context_.queue.now();
  if (buckets_) {
    backward_bucket(worker, 0);
    return;
  }
  context_.run(worker, nullptr, backward_seconds_ * s.factor, [this, worker] { backward_bucket(worker, 0); });
}

// With watched buckets: runs bucket b's backward, reports it, goes on with b + 1. Without: backward is done.
void WorkerLoops::backward_bucket(int64_t worker, size_t bucket) {
  State& s = states_[static_cast<size_t>(worker)];
  if (!buckets_ || bucket == buckets_->size()) {
    context_.span(worker, "backward", s.phase_start);
    const double slowdown = context_.variability[static_cast<size_t>(worker)].slowdown();
    if (slowdown > 1) {
      // train/worker_loop.cpp: sleep (FACTOR - 1) times the time since forward started.
      const double seconds = (slowdown - 1) * (context_.queue.now() - s.compute_start);
      context_.sleep(worker, "slowdown", seconds, [this, worker] { after_backward(worker); });
    } else {
      after_backward(worker);
    }
    return;
  }
  context_.run(worker, nullptr, bucket_backward_[bucket] * s.factor, [this, worker, bucket] {
    workload_.bucket_ready(worker, context_.iteration[static_cast<size_t>(worker)], bucket);
    backward_bucket(worker, bucket + 1);
  });
}

void WorkerLoops::after_backward(int64_t worker) {
  const int64_t step = context_.iteration[static_cast<size_t>(worker)];
  workload_.after_backward(worker, step, [this, worker, step] {
    on_iteration_(worker, step);
    ++context_.iteration[static_cast<size_t>(worker)];
    start_iteration(worker);
  });
}

}  // namespace distsgd::sim
