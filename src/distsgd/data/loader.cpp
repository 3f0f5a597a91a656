#include "distsgd/data/loader.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/data/seed_mix.hpp"

#include <torch/torch.h>

#include <limits>
#include <numeric>
#include <random>

namespace distsgd::data {
namespace {

// Uniform in [0, bound) by rejection, so the permutation does not depend on the standard library's distributions.
uint64_t uniform_below(std::mt19937_64& rng, uint64_t bound) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  const uint64_t limit = kMax - kMax % bound;  // a multiple of bound: draws below it are unbiased mod bound
  uint64_t draw;
  do draw = rng();
  while (draw >= limit);
  return draw % bound;
}

}  // namespace

std::vector<int64_t> epoch_permutation(int64_t n, uint64_t seed, int64_t epoch) {
  require(n >= 0, "epoch_permutation: negative size " + std::to_string(n));
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t(0));
  std::mt19937_64 rng(mix_seed(seed, uint64_t(epoch)));
  for (int64_t i = n - 1; i > 0; --i) std::swap(perm[size_t(i)], perm[uniform_below(rng, uint64_t(i) + 1)]);
  return perm;
}

ShardedLoader::ShardedLoader(const Dataset& dataset, const Split& split, LoaderOptions options)
    : dataset_(dataset), split_(split), options_(options) {
  require(options_.batch_size > 0, "batch size must be positive (got " + std::to_string(options_.batch_size) + ")");
  require(options_.world > 0, "world size must be positive (got " + std::to_string(options_.world) + ")");
  require(options_.rank >= 0 && options_.rank < options_.world,
          "rank " + std::to_string(options_.rank) + " is outside [0, " + std::to_string(options_.world) + ")");
  require(options_.prefetch >= 0, "prefetch must be >= 0 (got " + std::to_string(options_.prefetch) + ")");
  require(split_.images.defined() && split_.labels.defined() && split_.images.dim() == 4 &&
              split_.images.size(0) == split_.size(),
          "the " + dataset_.name + " split has no images, or a different number of images and labels");
  const int64_t per_step = options_.world * options_.batch_size;
  require(steps_per_epoch() >= 1, "the " + dataset_.name + " dataset of " + std::to_string(split_.size()) +
                                      " samples is too small for world*batch = " + std::to_string(options_.world) +
                                      "*" + std::to_string(options_.batch_size) + " = " + std::to_string(per_step) +
                                      " samples per step (use a smaller batch size or fewer workers)");
}

ShardedLoader::~ShardedLoader() { stop_worker(); }

int64_t ShardedLoader::steps_per_epoch() const {
  return steps_per_epoch(split_.size(), options_.world, options_.batch_size);
}

std::vector<int64_t> ShardedLoader::shard_indices(int64_t epoch) const {
  const int64_t n = split_.size(), world = options_.world, batch = options_.batch_size, steps = steps_per_epoch();
  std::vector<int64_t> perm;
  if (options_.shuffle) {
    perm = epoch_permutation(n, options_.seed, epoch);
  } else {
    perm.resize(size_t(n));
    std::iota(perm.begin(), perm.end(), int64_t(0));
  }
  std::vector<int64_t> shard;
  shard.reserve(size_t(steps * batch));
  for (int64_t step = 0; step < steps; ++step) {
    const int64_t begin = (step * world + options_.rank) * batch;
    shard.insert(shard.end(), perm.begin() + begin, perm.begin() + begin + batch);
  }
  return shard;
}

void ShardedLoader::start_epoch(int64_t epoch, int64_t first_step) {
  stop_worker();
  const int64_t steps = steps_per_epoch();
  require(first_step >= 0 && first_step <= steps, "first step " + std::to_string(first_step) + " is outside [0, " +
                                                      std::to_string(steps) + "] for an epoch of " +
                                                      std::to_string(steps) + " steps");
  order_ = shard_indices(epoch);
  epoch_ = epoch;
  next_step_ = first_step;
  ready_.clear();
  stopping_ = false;
  epoch_done_ = false;
  error_ = nullptr;
  if (options_.prefetch == 0) return;

  worker_ = std::thread([this, first_step, steps] {
    // A new thread starts with the default OpenMP thread count; take the configured intra-op count instead.
    at::init_num_threads();
    try {
      for (int64_t step = first_step; step < steps; ++step) {
        Batch batch = make_batch(order_, step);  // outside the lock: the consumer keeps going meanwhile
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [this] { return stopping_ || int64_t(ready_.size()) < options_.prefetch; });
        if (stopping_) return;
        ready_.push_back(std::move(batch));
        cv_.notify_all();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    epoch_done_ = true;
    cv_.notify_all();
  });
}

std::optional<Batch> ShardedLoader::next() {
  require(!order_.empty(), "ShardedLoader::next() called before start_epoch()");
  if (options_.prefetch == 0) {
    if (next_step_ >= steps_per_epoch()) return std::nullopt;
    return make_batch(order_, next_step_++);
  }
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return !ready_.empty() || epoch_done_; });
  // Batches prepared before a failure are still served in order; the failure comes right after them.
  if (ready_.empty()) {
    if (error_) std::rethrow_exception(error_);
    return std::nullopt;
  }
  Batch batch = std::move(ready_.front());
  ready_.pop_front();
  ++next_step_;
  cv_.notify_all();
  return batch;
}

Batch ShardedLoader::make_batch(const std::vector<int64_t>& order, int64_t step) const {
  torch::NoGradGuard no_grad;
  const int64_t batch_size = options_.batch_size;
  // from_blob borrows the indices: they only need to live through the index_select calls below.
  const at::Tensor indices =
      torch::from_blob(const_cast<int64_t*>(order.data() + step * batch_size), {batch_size}, torch::kInt64);
  Batch batch;
  batch.images = normalize(split_.images.index_select(0, indices), dataset_);
  batch.labels = split_.labels.index_select(0, indices);
  batch.epoch = epoch_;
  batch.step = step;
  return batch;
}

void ShardedLoader::stop_worker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

}  // namespace distsgd::data
