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

int64_t Communicator::worker_index() const {
  const auto found = std::find(worker_ranks_.begin(), worker_ranks_.end(), rank_);
  return found == worker_ranks_.end() ? -1 : found - worker_ranks_.begin();
}

void Communicator::do_idle_work() {
  if (!idle_work_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - idle_work_done_ < std::chrono::milliseconds(50)) return;
  idle_work_done_ = now;
  idle_work_();
}

}  // namespace distsgd::comm
