// Each simulated worker's training loop, as train/worker_loop.cpp runs it: take the next batch from the loader
// ("data": the wait for it; the loader thread reads `prefetch` batches ahead), the algorithm's before_forward,
// "forward", before_backward, "backward", "slowdown" (--slowdown), after_backward. Forward and backward take the
// profile's times (per bucket where the algorithm watches buckets), times the worker's compute factor, jitter and
// straggler episodes for that iteration.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "distsgd/sim/des/context.hpp"
#include "distsgd/sim/des/workload.hpp"

namespace distsgd::sim {

class WorkerLoops {
 public:
  // `on_iteration(worker, step)` runs when a worker completes an iteration (after after_backward).
  WorkerLoops(DesContext& context, Workload& workload, std::function<void(int64_t, int64_t)> on_iteration);
  // Starts every worker's first iteration: at time 0, or spread over one iteration for independent workers
  // (sim/platform/start_phases.hpp).
  void start();
  // Compute time (forward, backward, slowdown and what the workload ran on the worker) of each worker so far.
  int64_t total_iterations() const { return context_.settings.warmup + context_.settings.iterations; }

 private:
  struct Loader {
    std::deque<double> taken;  // when the last `prefetch` batches were taken
    double ready = 0;          // when the latest batch was read
  };
  struct State {
    Loader loader;
    double compute_start = 0;
    double phase_start = 0;
    double factor = 1;
  };

  void start_iteration(int64_t worker);
  void take_batch(int64_t worker);
  void forward(int64_t worker);
  void forward_bucket(int64_t worker, size_t remaining);
  void backward(int64_t worker);
  void backward_bucket(int64_t worker, size_t bucket);
  void after_backward(int64_t worker);

  DesContext& context_;
  Workload& workload_;
  std::function<void(int64_t, int64_t)> on_iteration_;
  const BucketLayout* buckets_;
  std::vector<double> bucket_forward_, bucket_backward_;
  double forward_seconds_, backward_seconds_, read_seconds_;
  std::vector<State> states_;
};

}  // namespace distsgd::sim
