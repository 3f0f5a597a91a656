// AR-SGD --overlap multistep (Lee et al. 2018): during backward each bucket is reduce-scattered (alltoall of 1/n
// slices and a local sum; Gloo in libtorch 1.13 has no reduce_scatter); each worker updates only its 1/n slice
// (update cost / n); the updated slices are allgathered, input-side bucket first, overlapped with the next forward
// pass, which waits for a bucket only when it needs it: the model's forward gate (Model::set_forward_gate) opens a
// block's buckets right before the block runs. Models without gates (TorchScript) wait for every bucket before
// forward.
#include "distsgd/algo/allreduce/allreduce_worker.hpp"
#include "distsgd/algo/allreduce/gradient_buckets.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/optim/float_buffer.hpp"
#include "distsgd/optim/kernels.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/zeros.h>

#include <vector>

namespace distsgd::algo::allreduce {
namespace {

class MultistepAllreduce final : public AllreduceWorker {
 public:
  explicit MultistepAllreduce(const WorkerSetup& s)
      : AllreduceWorker(s),
        tracker_(model_, buckets_from_flags(), [this](size_t b) { launch(b); }),
        buckets_(tracker_.buckets()),
        reductions_(buckets_.size()),
        gathers_(buckets_.size()) {
    for (const auto& bucket : buckets_) {
      SliceBuffers s;
      s.chunk = (bucket.numel + workers_ - 1) / workers_;
      s.send = at::zeros({workers_ * s.chunk});
      s.received = at::zeros({workers_ * s.chunk});
      s.own = at::zeros({s.chunk});
      s.gathered = at::zeros({workers_ * s.chunk});
      slices_.push_back(s);
    }
    if (model_.supports_forward_gate()) {
      bucket_of_parameter_.resize(flat_.slots().size());
      for (size_t b = 0; b < buckets_.size(); ++b) {
        for (size_t p : buckets_[b].parameters) bucket_of_parameter_[p] = b;
      }
      model_.set_forward_gate([this](int64_t first, int64_t end) { wait_gathers_of(first, end); });
      gated_ = true;
    }
  }

  ~MultistepAllreduce() override {
    // The model outlives this algorithm: its gate must not call into a destroyed one.
    if (gated_) model_.set_forward_gate(nullptr);
    // Never leave a collective referencing freed buffers.
    try {
      wait_gathers();
    } catch (...) {
    }
  }

  // With a gated model, forward itself waits for each block's gathers.
  void before_forward(int64_t) override {
    if (!gated_) wait_gathers();
  }

  void before_backward(int64_t, double) override {
    wait_gathers();  // anything forward did not need (parameters without a gate call, none in the registry)
    tracker_.arm();
  }

  void after_backward(int64_t, double lr) override {
    tracker_.flush();
    update_slices(lr);
  }

  void before_evaluation() override { wait_gathers(); }
  // The step's parameters are complete only once its allgathers are in.
  void save_state(AlgorithmState& state) override {
    wait_gathers();
    AllreduceWorker::save_state(state);
  }
  void finish() override { wait_gathers(); }

 private:
  struct SliceBuffers {
    int64_t chunk = 0;    // elements of each worker's slice (bucket padded to workers * chunk)
    at::Tensor send;      // padded gradients
    at::Tensor received;  // [workers * chunk]: slice `rank` of every worker's gradient
    at::Tensor own;       // this worker's updated parameter slice, padded to chunk
    at::Tensor gathered;  // [workers * chunk]: every worker's slice
  };

  // Starts bucket b's reduce-scatter (on the backward thread, in bucket order).
  void launch(size_t b) {
    const auto& bucket = buckets_[b];
    auto& s = slices_[b];
    s.send.narrow(0, 0, bucket.numel).copy_(flat_.grads().narrow(0, bucket.offset, bucket.numel));
    reductions_[b] = traced(comm_->alltoall(s.received, s.send), "reduce-scatter bucket " + std::to_string(b));
    bytes_sent_ += static_cast<int64_t>(share() * 4.0 * static_cast<double>(bucket.numel));
  }

  // Sums this worker's slice of every bucket, updates it, and starts the allgathers.
  void update_slices(double lr) {
    for (size_t b = 0; b < buckets_.size(); ++b) {
      wait(reductions_[b]);
      const auto& bucket = buckets_[b];
      auto& s = slices_[b];
      const int64_t begin = rank_ * s.chunk;
      const int64_t count = std::max<int64_t>(0, std::min(bucket.numel - begin, s.chunk));
      if (count == 0) continue;
      // The workers' slices summed in rank order into `own` (free until the new parameters are copied in), then
      // averaged and applied in the step's one pass.
      std::vector<const float*> rows;
      for (int64_t w = 0; w < workers_; ++w) rows.push_back(optim::floats(s.received) + w * s.chunk);
      auto reduced = s.own.narrow(0, 0, count);
      optim::kernels::sum_rows(optim::floats(reduced), rows.data(), rows.size(), optim::length(reduced));
      auto params = flat_.params().narrow(0, bucket.offset + begin, count);
      update(params, reduced, lr, bucket.offset + begin, static_cast<double>(workers_));
      reduced.copy_(params);
    }
    // Input-side buckets (the highest indices) first: the next forward needs them first.
    for (size_t b = buckets_.size(); b-- > 0;) {
      auto& s = slices_[b];
      std::vector<at::Tensor> outputs;
      for (int64_t w = 0; w < workers_; ++w) outputs.push_back(s.gathered.narrow(0, w * s.chunk, s.chunk));
      gathers_[b] = traced(comm_->allgather(outputs, s.own), "allgather bucket " + std::to_string(b));
      bytes_sent_ += static_cast<int64_t>(share() * 4.0 * static_cast<double>(buckets_[b].numel));
    }
    gather_pending_.assign(buckets_.size(), true);
    pending_gather_count_ = buckets_.size();
  }

  // Waits for bucket b's allgather and copies the gathered parameters into the model.
  void finish_gather(size_t b) {
    gather_pending_[b] = false;
    --pending_gather_count_;
    wait(gathers_[b]);
    const auto& bucket = buckets_[b];
    // The model's parameters are views of flat_.params(); no autograd graph may record this copy. Forward has
    // not used these parameters yet (a block's buckets are opened before it runs), so nothing saved is stale.
    at::NoGradGuard no_grad;
    flat_.params().narrow(0, bucket.offset, bucket.numel).copy_(slices_[b].gathered.narrow(0, 0, bucket.numel));
  }

  void wait_gathers() {
    for (size_t b = buckets_.size(); pending_gather_count_ > 0 && b-- > 0;) {
      if (gather_pending_[b]) finish_gather(b);
    }
  }

  // The forward gate: the gathers of every bucket holding one of parameters [first, end).
  void wait_gathers_of(int64_t first, int64_t end) {
    if (pending_gather_count_ == 0) return;  // also every evaluation, and the first forward
    const double waited_before = waiting_.total();
    for (int64_t p = first; p < end; ++p) {
      const size_t b = bucket_of_parameter_[static_cast<size_t>(p)];
      if (gather_pending_[b]) finish_gather(b);
    }
    waiting_in_forward_seconds_ += waiting_.total() - waited_before;
  }

  BucketReadyTracker tracker_;
  const std::vector<Bucket>& buckets_;  // the tracker's
  std::vector<comm::Work> reductions_;
  std::vector<SliceBuffers> slices_;
  std::vector<comm::Work> gathers_;
  std::vector<bool> gather_pending_;  // per bucket: gathered parameters not yet copied into the model
  size_t pending_gather_count_ = 0;
  std::vector<size_t> bucket_of_parameter_;  // with a gated model only
  bool gated_ = false;                       // the model's forward waits for the gathers it needs
};

}  // namespace

std::unique_ptr<WorkerAlgorithm> make_multistep_allreduce(const WorkerSetup& setup) {
  return std::make_unique<MultistepAllreduce>(setup);
}

}  // namespace distsgd::algo::allreduce
