// AR-SGD --overlap wfbp (wait-free backprop): gradients grouped into buckets (gradient_buckets.hpp); each bucket's
// allreduce starts during backward as soon as its gradients are accumulated, buckets launched in index order on
// every rank; after backward every reduction is awaited and the same step taken everywhere.
#include "distsgd/algo/allreduce/allreduce_worker.hpp"
#include "distsgd/algo/allreduce/gradient_buckets.hpp"
#include "distsgd/optim/flat_parameters.hpp"

#include <ATen/core/Tensor.h>

namespace distsgd::algo::allreduce {
namespace {

class BucketedAllreduce final : public AllreduceWorker {
 public:
  explicit BucketedAllreduce(const WorkerSetup& s)
      : AllreduceWorker(s),
        tracker_(model_, buckets_from_flags(), [this](size_t b) { launch(b); }),
        reductions_(tracker_.buckets().size()) {}

  void before_backward(int64_t, double) override { tracker_.arm(); }

  void after_backward(int64_t, double lr) override {
    tracker_.flush();
    for (auto& reduction : reductions_) wait(reduction);
    update(flat_.params(), flat_.grads(), lr, 0, static_cast<double>(workers_));  // the mean, in the same pass
  }

 private:
  // Called on the backward thread, in bucket order.
  void launch(size_t b) {
    const auto& bucket = tracker_.buckets()[b];
    reductions_[b] = traced(comm_->allreduce_sum(flat_.grads().narrow(0, bucket.offset, bucket.numel)),
                            "allreduce bucket " + std::to_string(b));
    bytes_sent_ += static_cast<int64_t>(2 * share() * 4.0 * static_cast<double>(bucket.numel));  // ring
  }

  BucketReadyTracker tracker_;
  std::vector<comm::Work> reductions_;
};

}  // namespace

std::unique_ptr<WorkerAlgorithm> make_bucketed_allreduce(const WorkerSetup& setup) {
  return std::make_unique<BucketedAllreduce>(setup);
}

}  // namespace distsgd::algo::allreduce
