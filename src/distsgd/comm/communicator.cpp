#include "distsgd/comm/communicator.hpp"

#include "distsgd/core/error.hpp"

#include <algorithm>

namespace distsgd::comm {

Communicator::Communicator(int64_t rank, int64_t world_size, int64_t workers, std::chrono::milliseconds timeout)
    : rank_(rank), world_size_(world_size), workers_(workers), timeout_(timeout) {
  require(workers >= 1 && workers <= world_size,
          "the run has " + std::to_string(world_size) + " processes but --workers " + std::to_string(workers));
  for (int64_t w = 0; w < workers; ++w) worker_ranks_.push_back(w);
}

bool Communicator::nobody_trained_for_the_timeout() {
  const auto* watch = liveness();
  return watch != nullptr && std::chrono::steady_clock::now() - watch->last_progress() > timeout_;
}

int64_t Communicator::worker_index() const {
  const auto found = std::find(worker_ranks_.begin(), worker_ranks_.end(), rank_);
  return found == worker_ranks_.end() ? -1 : found - worker_ranks_.begin();
}

}  // namespace distsgd::comm
