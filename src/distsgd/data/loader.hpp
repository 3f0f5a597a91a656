// Sharded, shuffled, prefetching batch loader.
//
// Every epoch the training split is permuted from (seed, epoch). Global batch t of the epoch is
// perm[t*W*B, (t+1)*W*B) for W workers of batch B, and worker k takes its k-th block of B samples. So the
// workers' shards are disjoint, together they cover the epoch (but for the last N mod W*B samples, which are
// dropped), and W workers of batch B see exactly the samples one process of batch W*B sees: the property the
// distributed equivalence tests rely on.
#pragma once
#include "distsgd/data/dataset.hpp"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

namespace distsgd::data {

struct Batch {
  at::Tensor images;  // float, normalized [B, C, H, W]
  at::Tensor labels;  // int64 [B]
  int64_t epoch = 0;
  int64_t step = 0;  // index of this batch within the epoch
};

struct LoaderOptions {
  int64_t rank = 0;
  int64_t world = 1;
  int64_t batch_size = 64;
  uint64_t seed = 1;
  bool shuffle = true;
  int64_t prefetch = 4;  // batches prepared ahead by the background thread; 0 = prepare on demand
};

class ShardedLoader {
 public:
  ShardedLoader(const Dataset& dataset, const Split& split, LoaderOptions options);
  ~ShardedLoader();
  ShardedLoader(const ShardedLoader&) = delete;
  ShardedLoader& operator=(const ShardedLoader&) = delete;

  // Batches per epoch for each worker (the same for all workers).
  int64_t steps_per_epoch() const;
  static int64_t steps_per_epoch(int64_t samples, int64_t world, int64_t batch_size) {
    return samples / (world * batch_size);
  }

  // Starts (or restarts) an epoch at batch first_step; the background thread begins preparing batches.
  void start_epoch(int64_t epoch, int64_t first_step = 0);

  // The next batch of the current epoch, or nullopt at its end.
  std::optional<Batch> next();

  // Indices (into the split) of this worker's samples in the given epoch, in the order they are served.
  std::vector<int64_t> shard_indices(int64_t epoch) const;

 private:
  Batch make_batch(const std::vector<int64_t>& order, int64_t step) const;
  void stop_worker();

  const Dataset& dataset_;
  const Split& split_;
  LoaderOptions options_;
  // Prefetch state (guarded by mutex_).
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Batch> ready_;
  bool stopping_ = false;
  bool epoch_done_ = false;
  std::exception_ptr error_;
  // On-demand state (prefetch == 0).
  std::vector<int64_t> order_;
  int64_t epoch_ = 0, next_step_ = 0;
};

// Deterministic permutation of [0, n) for (seed, epoch): Fisher-Yates over a 64-bit Mersenne twister.
std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch);

}  // namespace distsgd::data
