#include "distsgd/algo/compression/sparse_allgather_sgd.hpp"

#include "distsgd/algo/comm_trace.hpp"
#include "distsgd/algo/compression/dgc.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/timed_phase.hpp"
#include "distsgd/core/timeline.hpp"
#include "distsgd/core/timer.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/optim/float_buffer.hpp"
#include "distsgd/optim/kernels.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty_like.h>

namespace distsgd::algo::compression {
namespace {

class SparseAllgatherSgd final : public WorkerAlgorithm {
 public:
  explicit SparseAllgatherSgd(const WorkerSetup& s)
      : setup_(s),
        workers_(s.comm ? s.comm->workers() : 1),
        compressor_(s.flat.slots(), dgc_options(s.config, s.steps_per_epoch)) {}

  void after_backward(int64_t step, double lr) override {
    auto& flat = setup_.flat;
    at::Tensor packed;
    {
      TimedPhase phase(setup_.timeline, "compress", update_time_);
      packed = pack(compressor_.compress(flat.grads(), flat.params(), compressor_.density_at(step)));
    }
    std::vector<at::Tensor> gathered{packed};
    if (workers_ > 1) {
      gathered.clear();
      for (int64_t w = 0; w < workers_; ++w) gathered.push_back(at::empty_like(packed));
      TimedPhase phase(setup_.timeline, "wait", waiting_);
      trace_completion(setup_.comm->allgather(gathered, packed), setup_.timeline, "allgather sparse gradient").wait();
      // A ring allgather forwards n-1 of the n blocks through every worker.
      bytes_sent_ += 4 * packed.numel() * (workers_ - 1);
    }
    TimedPhase phase(setup_.timeline, "update", update_time_);
    at::NoGradGuard no_grad;
    auto& sum = flat.grads();  // reused as the dense mean of the workers' selections
    optim::kernels::zero(optim::floats(sum), optim::length(sum));
    for (const auto& g : gathered) add_sparse(sum, unpack(g));  // rank order: identical on every worker
    optim::kernels::add_scaled(optim::floats(flat.params()), optim::floats(sum), optim::length(sum),
                               -lr / static_cast<double>(workers_));
  }

  // Momentum and weight decay live in the compressor's accumulators.
  void save_state(AlgorithmState& state) override { compressor_.save_state(state); }
  void load_state(const AlgorithmState& state) override { compressor_.load_state(state); }

  AlgorithmStats stats() const override {
    AlgorithmStats s;
    s.communication_wait_seconds = waiting_.total();
    s.update_seconds = update_time_.total();
    s.bytes_sent = bytes_sent_;
    return s;
  }

 private:
  WorkerSetup setup_;
  int64_t workers_;
  DgcCompressor compressor_;
  Stopwatch waiting_, update_time_;
  int64_t bytes_sent_ = 0;
};

}  // namespace

std::unique_ptr<WorkerAlgorithm> make_sparse_allgather_sgd(const WorkerSetup& setup) {
  return std::make_unique<SparseAllgatherSgd>(setup);
}

}  // namespace distsgd::algo::compression
