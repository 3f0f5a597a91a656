#include "distsgd/train/compute_capacity.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "distsgd/core/error.hpp"
#include "distsgd/core/host_cores.hpp"
#include "distsgd/core/timer.hpp"
#include "distsgd/data/dataset.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/optim/threads.hpp"
#include "distsgd/train/loss.hpp"
#include "distsgd/train/process.hpp"

namespace distsgd::train {
namespace {

// One rank's compute: forward, loss and backward of its own model on successive batches.
class Rank {
 public:
  Rank(const TrainConfig& config, const data::Dataset& dataset, uint64_t seed) : config_(config), dataset_(dataset) {
    configure_threads(1, 1);  // this thread's intra-op setting (per thread), as a rank run with --threads 1
    at::manual_seed(seed);
    model_ = models::make_model(model_options(config), input_spec(dataset));
  }
  void warm_up() {
    for (int k = 0; k < 3; ++k) step();
  }
  // Iterations until `deadline` is past: how many ended before it.
  int64_t iterations_until(Clock::time_point deadline) {
    int64_t done = 0;
    while (Clock::now() < deadline) {
      step();
      if (Clock::now() <= deadline) ++done;
    }
    return done;
  }

 private:
  void step() {
    if (offset_ + config_.batch_size > dataset_.train.size()) offset_ = 0;
    const auto images =
        data::normalize(dataset_.train.images.slice(0, offset_, offset_ + config_.batch_size), dataset_);
    const auto labels = dataset_.train.labels.slice(0, offset_, offset_ + config_.batch_size).clone();
    offset_ += config_.batch_size;
    for (auto& p : model_->parameters()) p.mutable_grad() = at::Tensor();
    prediction_loss(model_->forward(images), labels).backward();
  }

  const TrainConfig& config_;
  const data::Dataset& dataset_;
  std::unique_ptr<models::Model> model_;
  int64_t offset_ = 0;
};

// The iterations `ranks` threads, each a rank with a model of its own, complete in `seconds` started together (each
// builds its model and warms up first, then waits for the others). A thread's error is rethrown once all have ended;
// a thread that failed still takes its place at the start, so that none waits for it.
int64_t iterations_in_window(const TrainConfig& config, const data::Dataset& dataset, int64_t ranks, double seconds) {
  std::mutex mutex;
  std::condition_variable all_ready;
  std::exception_ptr error;
  auto keep_first = [&](std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!error) error = e;
  };
  int64_t ready = 0;
  Clock::time_point deadline;
  std::vector<int64_t> done(static_cast<size_t>(ranks), 0);
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      std::unique_ptr<Rank> rank;
      try {
        rank = std::make_unique<Rank>(config, dataset, config.seed + static_cast<uint64_t>(r));
        rank->warm_up();
      } catch (...) {
        keep_first(std::current_exception());
      }
      Clock::time_point until;
      {
        std::unique_lock<std::mutex> lock(mutex);
        if (++ready == ranks) {
          deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
          all_ready.notify_all();
        }
        all_ready.wait(lock, [&] { return ready == ranks; });
        until = deadline;
      }
      if (!rank) return;
      try {
        done[static_cast<size_t>(r)] = rank->iterations_until(until);
      } catch (...) {
        keep_first(std::current_exception());
      }
    });
  }
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  int64_t total = 0;
  for (const int64_t d : done) total += d;
  require(total > 0, "compute capacity: no iteration ended within " + std::to_string(seconds) + " s");
  return total;
}

}  // namespace

ComputeCapacity measure_compute_capacity(const TrainConfig& config, int64_t ranks, int64_t repeats) {
  require(ranks >= 2, "--ranks-at-once must be at least 2 (got " + std::to_string(ranks) + ")");
  require(repeats >= 3, "--repeats must be at least 3 (got " + std::to_string(repeats) + ")");
  const auto dataset = data::load_dataset(dataset_options(config));
  require(dataset.train.size() >= config.batch_size, "the dataset has fewer samples than --batch-size");
  ComputeCapacity capacity;
  capacity.ranks = ranks;
  // Throughput over windows, not each thread's own steps: a step of a few ms runs within one time slice, as fast as
  // alone, and the thread then waits its turn, so only what they all complete shows the sharing. One thread alone
  // before and after the K together, against the host's drift; the window holds `repeats` of each rank's steps.
  const double first = 0.5 / static_cast<double>(iterations_in_window(config, dataset, 1, 0.5));
  const double window = std::max(0.5, static_cast<double>(repeats * ranks) * first);
  const int64_t together = iterations_in_window(config, dataset, ranks, window);
  const int64_t alone = iterations_in_window(config, dataset, 1, window / 2) * 2;
  capacity.alone_seconds = (first + window / static_cast<double>(alone)) / 2;
  capacity.together_seconds = window * static_cast<double>(ranks) / static_cast<double>(together);
  // Never above the host's cores: on a noisy host the thread alone can be the one slowed (2.19 of 2 cores, once).
  capacity.cores = std::clamp(static_cast<double>(ranks) * capacity.alone_seconds / capacity.together_seconds, 1.0,
                              static_cast<double>(std::min(ranks, host_cores())));
  return capacity;
}

nlohmann::json compute_capacity_json(const ComputeCapacity& capacity) {
  return {{"ranks", capacity.ranks},
          {"alone_seconds", capacity.alone_seconds},
          {"together_seconds", capacity.together_seconds},
          {"cores", capacity.cores}};
}

std::string compute_capacity_text(const ComputeCapacity& capacity) {
  char line[200];
  std::snprintf(line, sizeof line,
                "%lld ranks computing at once: %.3f ms a step each, %.3f ms alone: the capacity of %.2f cores "
                "(compute_capacity; simulate --shared-cores)\n",
                static_cast<long long>(capacity.ranks), capacity.together_seconds * 1e3, capacity.alone_seconds * 1e3,
                capacity.cores);
  return line;
}

}  // namespace distsgd::train
