#include "distsgd/train/compute_capacity.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "distsgd/core/error.hpp"
#include "distsgd/core/timer.hpp"
#include "distsgd/data/dataset.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/optim/threads.hpp"
#include "distsgd/train/loss.hpp"
#include "distsgd/train/process.hpp"

namespace distsgd::train {
namespace {

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// One rank's compute: forward, loss and backward of its own model on successive batches (3 untimed first).
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
  // `repeats` timed iterations, their times.
  std::vector<double> iteration_times(int64_t repeats) {
    std::vector<double> times;
    for (int64_t k = 0; k < repeats; ++k) {
      const auto start = Clock::now();
      step();
      times.push_back(seconds_since(start));
    }
    return times;
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

}  // namespace

ComputeCapacity measure_compute_capacity(const TrainConfig& config, int64_t ranks, int64_t repeats) {
  require(ranks >= 2, "--ranks-at-once must be at least 2 (got " + std::to_string(ranks) + ")");
  require(repeats >= 3, "--repeats must be at least 3 (got " + std::to_string(repeats) + ")");
  const auto dataset = data::load_dataset(dataset_options(config));
  require(dataset.train.size() >= config.batch_size, "the dataset has fewer samples than --batch-size");
  ComputeCapacity capacity;
  capacity.ranks = ranks;
  std::vector<double> alone;
  std::thread([&] {
    Rank rank(config, dataset, config.seed);
    rank.warm_up();
    alone = rank.iteration_times(repeats);
  }).join();
  capacity.alone_seconds = median_of(alone);

  // Every thread builds its model and waits for the others; then all run for one window. A thread's steps are not
  // what shows the sharing (a step of a few ms runs within one time slice, as fast as alone, and the thread then
  // waits its turn): the steps all of them complete in the window, against one thread alone, are.
  const double window = std::max(1.0, static_cast<double>(repeats * ranks) * capacity.alone_seconds);
  std::mutex mutex;
  std::condition_variable all_ready;
  int64_t ready = 0;
  Clock::time_point deadline;
  std::vector<int64_t> steps(static_cast<size_t>(ranks), 0);
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      Rank rank(config, dataset, config.seed + static_cast<uint64_t>(r));
      rank.warm_up();
      Clock::time_point until;
      {
        std::unique_lock<std::mutex> lock(mutex);
        if (++ready == ranks) {
          deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(window));
          all_ready.notify_all();
        }
        all_ready.wait(lock, [&] { return ready == ranks; });
        until = deadline;
      }
      steps[static_cast<size_t>(r)] = rank.iterations_until(until);
    });
  }
  for (auto& t : threads) t.join();
  int64_t total = 0;
  for (const int64_t s : steps) total += s;
  require(total > 0, "compute capacity: no iteration ended within " + std::to_string(window) + " s");
  // Each of the ranks took this long a step, on average, with all of them computing.
  capacity.together_seconds = window * static_cast<double>(ranks) / static_cast<double>(total);
  capacity.cores = std::clamp(static_cast<double>(ranks) * capacity.alone_seconds / capacity.together_seconds, 1.0,
                              static_cast<double>(ranks));
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
