#include "distsgd/algo/ps/host_bucket_sums.hpp"

#include "distsgd/algo/ps/protocol.hpp"
#include "distsgd/core/timeline.hpp"
#include "distsgd/optim/float_buffer.hpp"
#include "distsgd/optim/kernels.hpp"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>

namespace distsgd::algo::ps {

HostBucketSums::HostBucketSums(comm::Communicator& comm, models::Model& model, std::vector<Bucket> buckets,
                               HostGroup group, at::Tensor gradients, at::Tensor sum, std::function<void(size_t)> push,
                               Timeline& timeline)
    : comm_(comm),
      buckets_(buckets),
      group_(std::move(group)),
      gradients_(std::move(gradients)),
      sum_(std::move(sum)),
      received_(buckets.size()),
      push_(std::move(push)),
      timeline_(timeline) {
  for (int64_t k = 1; k < group_.size(); ++k) members_.push_back(at::empty({gradients_.numel()}));
  tracker_ = std::make_unique<BucketReadyTracker>(model, std::move(buckets), [this](size_t b) {
    std::lock_guard<std::mutex> lock(mutex_);
    backward_done_ = b + 1;
    produced_.notify_all();
  });
}

HostBucketSums::~HostBucketSums() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    backward_done_ = buckets_.size();  // a step cut short: let the thread run out
    produced_.notify_all();
  }
  thread_.join();
}

void HostBucketSums::start() {
  // Posted before the members can send: each member's buckets arrive in order on one tag.
  for (size_t b = 0; b < buckets_.size(); ++b) {
    for (size_t k = 0; k < members_.size(); ++k) {
      received_[b].push_back(comm_.receive(members_[k].narrow(0, buckets_[b].offset, buckets_[b].numel),
                                           group_.members[k + 1], kHostGradientTag));
    }
  }
  backward_done_ = 0;
  failure_ = nullptr;
  tracker_->arm();
  thread_ = runtime::Thread("host bucket sums", [this] { sum_buckets(); });
}

void HostBucketSums::finish() {
  tracker_->flush();
  thread_.join();
  if (failure_) std::rethrow_exception(failure_);
}

void HostBucketSums::sum_buckets() {
  try {
    for (size_t b = 0; b < buckets_.size(); ++b) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        produced_.wait(
            lock, [&] { return backward_done_ > b; }, "backward's next bucket");
      }
      sum_bucket(b);
      push_(b);
    }
  } catch (...) {
    failure_ = std::current_exception();
  }
}

void HostBucketSums::sum_bucket(size_t b) {
  Timeline::Scope span(timeline_, "sum the host's bucket", Timeline::kCommunication);
  for (auto& w : received_[b]) w.wait();
  received_[b].clear();
  at::NoGradGuard no_grad;
  const auto& bucket = buckets_[b];
  const auto slice = [&](const at::Tensor& t) { return optim::floats(t) + bucket.offset; };
  std::vector<const float*> rows{slice(gradients_)};
  for (const auto& g : members_) rows.push_back(slice(g));
  optim::kernels::sum_rows(slice(sum_), rows.data(), rows.size(), bucket.numel);
}

HostBucketSends::HostBucketSends(comm::Communicator& comm, models::Model& model, std::vector<Bucket> buckets,
                                 int64_t leader, at::Tensor gradients)
    : comm_(comm), leader_(leader), gradients_(std::move(gradients)) {
  tracker_ = std::make_unique<BucketReadyTracker>(model, std::move(buckets), [this](size_t b) {
    const auto& bucket = tracker_->buckets()[b];
    sends_.push_back(comm_.send(gradients_.narrow(0, bucket.offset, bucket.numel), leader_, kHostGradientTag));
  });
}

HostBucketSends::~HostBucketSends() = default;

void HostBucketSends::start() { tracker_->arm(); }

void HostBucketSends::finish() {
  tracker_->flush();
  for (auto& w : sends_) w.wait();
  sends_.clear();
}

}  // namespace distsgd::algo::ps
