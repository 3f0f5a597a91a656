// AR-SGD: gradients averaged by allreduce, the same optimizer step on every worker (spec: "AR-SGD").
// --overlap none:      one allreduce of the flat gradient after backward.
// --overlap wfbp:      wait-free backprop: each bucket's allreduce starts during backward as soon as its gradients
//                      are ready, buckets launched in index order on every rank.
// --overlap multistep: Lee et al. 2018: during backward each bucket is reduce-scattered (alltoall of 1/n slices
//                      and a local sum; Gloo in libtorch 1.13 has no reduce_scatter); each worker updates only its
//                      1/n slice (update cost / n); the updated slices are allgathered, input-side bucket first,
//                      overlapped with the next forward pass, which waits for a bucket only when it needs it:
//                      the model's forward gate (Model::set_forward_gate) opens a block's buckets right before
//                      the block runs. Models without gates (TorchScript) wait for every bucket before forward.
// --compress dgc:      the sparse allgather of algo/compression/sparse_allgather_sgd.hpp instead.
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/algo/comm_trace.hpp"
#include "distsgd/algo/compression/sparse_allgather_sgd.hpp"
#include "distsgd/algo/gradient_buckets.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/timer.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/train/flat_parameters.hpp"
#include "distsgd/train/sgd.hpp"
#include "distsgd/train/timeline.hpp"

#include <torch/torch.h>

namespace distsgd::algo {
namespace {

constexpr double kMegabyte = 1024.0 * 1024.0;

class AllreduceSgd final : public WorkerAlgorithm {
 public:
  explicit AllreduceSgd(const WorkerSetup& s)
      : config_(s.config),
        comm_(s.comm),
        model_(s.model),
        flat_(s.flat),
        timeline_(s.timeline),
        optimizer_(s.flat.numel(), s.config.momentum, s.config.weight_decay),
        workers_(s.comm ? s.comm->workers() : 1),
        rank_(s.comm ? s.comm->rank() : 0) {
    if (workers_ == 1) return;  // a single worker is plain SGD
    if (config_.overlap == "none") {
      buckets_.push_back(Bucket{0, flat_.numel(), {}});
    } else {
      buckets_ = make_buckets(flat_.slots(), static_cast<int64_t>(config_.first_bucket_mb * kMegabyte),
                              static_cast<int64_t>(config_.bucket_mb * kMegabyte));
      tracker_ = std::make_unique<BucketReadyTracker>(model_, buckets_, [this](size_t b) { launch(b); });
    }
    reductions_.resize(buckets_.size());
    if (config_.overlap == "multistep") {
      allocate_multistep_buffers();
      if (model_.supports_forward_gate()) {
        bucket_of_parameter_.resize(flat_.slots().size());
        for (size_t b = 0; b < buckets_.size(); ++b) {
          for (size_t p : buckets_[b].parameters) bucket_of_parameter_[p] = b;
        }
        model_.set_forward_gate([this](int64_t first, int64_t end) { wait_gathers_of(first, end); });
        gated_ = true;
      }
    }
  }

  ~AllreduceSgd() override {
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

  void before_backward(int64_t) override {
    wait_gathers();  // anything forward did not need (parameters without a gate call, none in the registry)
    if (tracker_) tracker_->arm();
  }

  void after_backward(int64_t, double lr) override {
    if (workers_ == 1) {
      update(flat_.params(), flat_.grads(), lr, 0);
      return;
    }
    if (tracker_) {
      tracker_->flush();
    } else {
      launch(0);
    }
    if (config_.overlap == "multistep") {
      update_slices(lr);
    } else {
      for (size_t b = 0; b < buckets_.size(); ++b) wait(reductions_[b]);
      flat_.grads().div_(static_cast<double>(workers_));
      update(flat_.params(), flat_.grads(), lr, 0);
    }
  }

  void before_evaluation() override { wait_gathers(); }
  void finish() override { wait_gathers(); }

  AlgorithmStats stats() const override {
    AlgorithmStats s;
    s.communication_wait_seconds = waiting_.total();
    s.communication_wait_in_forward_seconds = waiting_in_forward_seconds_;
    s.update_seconds = update_time_.total();
    s.bytes_sent = bytes_sent_;
    return s;
  }

  at::Tensor optimizer_state() override { return optimizer_.momentum_buffer(); }

 private:
  struct SliceBuffers {
    int64_t chunk = 0;     // elements of each worker's slice (bucket padded to workers * chunk)
    at::Tensor send;       // padded gradients
    at::Tensor received;   // [workers * chunk]: slice `rank` of every worker's gradient
    at::Tensor own;        // this worker's updated parameter slice, padded to chunk
    at::Tensor gathered;   // [workers * chunk]: every worker's slice
  };

  void allocate_multistep_buffers() {
    for (const auto& bucket : buckets_) {
      SliceBuffers s;
      s.chunk = (bucket.numel + workers_ - 1) / workers_;
      s.send = torch::zeros({workers_ * s.chunk});
      s.received = torch::zeros({workers_ * s.chunk});
      s.own = torch::zeros({s.chunk});
      s.gathered = torch::zeros({workers_ * s.chunk});
      slices_.push_back(s);
    }
    gathers_.resize(buckets_.size());
  }

  // Starts bucket b's communication (called in index order, during backward for wfbp and multistep).
  void launch(size_t b) {
    const auto& bucket = buckets_[b];
    auto grads = flat_.grads().narrow(0, bucket.offset, bucket.numel);
    const double bytes = 4.0 * static_cast<double>(bucket.numel);
    const double share = static_cast<double>(workers_ - 1) / static_cast<double>(workers_);
    const std::string name = "bucket " + std::to_string(b);
    if (config_.overlap == "multistep") {
      auto& s = slices_[b];
      s.send.narrow(0, 0, bucket.numel).copy_(grads);
      reductions_[b] = traced(comm_->alltoall(s.received, s.send), "reduce-scatter " + name);
      bytes_sent_ += static_cast<int64_t>(share * bytes);
    } else {
      reductions_[b] = traced(comm_->allreduce_sum(grads), "allreduce " + name);
      bytes_sent_ += static_cast<int64_t>(2 * share * bytes);  // ring allreduce
    }
  }

  // Multistep: sum this worker's slice of every bucket, update it, and start the allgathers.
  void update_slices(double lr) {
    for (size_t b = 0; b < buckets_.size(); ++b) {
      wait(reductions_[b]);
      const auto& bucket = buckets_[b];
      auto& s = slices_[b];
      const int64_t begin = rank_ * s.chunk;
      const int64_t count = std::max<int64_t>(0, std::min(bucket.numel - begin, s.chunk));
      if (count == 0) continue;
      auto reduced = s.received.view({workers_, s.chunk}).sum(0).narrow(0, 0, count).div_(workers_);
      auto params = flat_.params().narrow(0, bucket.offset + begin, count);
      update(params, reduced, lr, bucket.offset + begin);
      s.own.narrow(0, 0, count).copy_(params);
    }
    // Input-side buckets (the highest indices) first: the next forward needs them first.
    const double share = static_cast<double>(workers_ - 1) / static_cast<double>(workers_);
    for (size_t b = buckets_.size(); b-- > 0;) {
      auto& s = slices_[b];
      std::vector<at::Tensor> outputs;
      for (int64_t w = 0; w < workers_; ++w) outputs.push_back(s.gathered.narrow(0, w * s.chunk, s.chunk));
      gathers_[b] = traced(comm_->allgather(outputs, s.own), "allgather bucket " + std::to_string(b));
      bytes_sent_ += static_cast<int64_t>(share * 4.0 * static_cast<double>(buckets_[b].numel));
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
    torch::NoGradGuard no_grad;
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

  void update(at::Tensor params, at::Tensor grads, double lr, int64_t offset) {
    train::Timeline::Scope span(timeline_, "update");
    update_time_.start();
    optimizer_.step(params, grads, lr, offset);
    update_time_.stop();
  }

  comm::Work traced(comm::Work work, const std::string& name) { return trace_completion(std::move(work), timeline_, name); }

  void wait(comm::Work& work) {
    if (work.done()) return;
    train::Timeline::Scope span(timeline_, "wait");
    waiting_.start();
    work.wait();
    waiting_.stop();
  }

  const TrainConfig& config_;
  comm::Communicator* comm_;
  models::Model& model_;
  train::FlatParameters& flat_;
  train::Timeline& timeline_;
  train::MomentumSgd optimizer_;
  int64_t workers_, rank_;
  std::vector<Bucket> buckets_;
  std::unique_ptr<BucketReadyTracker> tracker_;
  std::vector<comm::Work> reductions_;
  std::vector<SliceBuffers> slices_;
  std::vector<comm::Work> gathers_;
  std::vector<bool> gather_pending_;  // per bucket: gathered parameters not yet copied into the model
  size_t pending_gather_count_ = 0;
  std::vector<size_t> bucket_of_parameter_;  // multistep with a gated model only
  bool gated_ = false;                       // the model's forward waits for the gathers it needs
  Stopwatch waiting_, update_time_;
  double waiting_in_forward_seconds_ = 0;  // the part of waiting_ spent inside forward gates
  int64_t bytes_sent_ = 0;
};

}  // namespace

AlgorithmInfo allreduce_sgd_algorithm() {
  AlgorithmInfo info;
  info.name = "arsgd";
  info.description = "allreduce SGD (--overlap none|wfbp|multistep)";
  info.compressible_gradients = true;
  info.make_worker = [](const WorkerSetup& s) -> std::unique_ptr<WorkerAlgorithm> {
    if (s.config.compress == "dgc") return compression::make_sparse_allgather_sgd(s);
    return std::make_unique<AllreduceSgd>(s);
  };
  return info;
}

}  // namespace distsgd::algo
