// AR-SGD --overlap none: one allreduce of the whole flat gradient after backward, then the same step everywhere.
// Also the single-worker case, which is plain momentum SGD.
#include "distsgd/algo/allreduce/allreduce_worker.hpp"

#include "distsgd/optim/flat_parameters.hpp"

#include <ATen/core/Tensor.h>

namespace distsgd::algo::allreduce {
namespace {

class WholeGradientAllreduce final : public AllreduceWorker {
 public:
  using AllreduceWorker::AllreduceWorker;

  void after_backward(int64_t, double lr) override {
    if (workers_ > 1) {
      auto reduction = traced(comm_->allreduce_sum(flat_.grads()), "allreduce bucket 0");
      bytes_sent_ += static_cast<int64_t>(2 * share() * 4.0 * static_cast<double>(flat_.numel()));  // ring
      wait(reduction);
    }
    update(flat_.params(), flat_.grads(), lr, 0, static_cast<double>(workers_));  // the mean, in the same pass
  }
};

}  // namespace

std::unique_ptr<WorkerAlgorithm> make_whole_gradient_allreduce(const WorkerSetup& setup) {
  return std::make_unique<WholeGradientAllreduce>(setup);
}

}  // namespace distsgd::algo::allreduce
