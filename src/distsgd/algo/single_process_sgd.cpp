// "sgd": plain single-process momentum SGD, the reference every distributed algorithm is compared with.
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/core/timed_phase.hpp"
#include "distsgd/core/timeline.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/optim/sgd.hpp"

namespace distsgd::algo {
namespace {

class LocalSgd final : public WorkerAlgorithm {
 public:
  explicit LocalSgd(const WorkerSetup& s)
      : flat_(s.flat), timeline_(s.timeline), optimizer_(s.flat.numel(), s.config.momentum, s.config.weight_decay) {}

  void after_backward(int64_t, double lr) override {
    TimedPhase phase(timeline_, "update", update_);
    optimizer_.step(flat_.params(), flat_.grads(), lr);
  }

  AlgorithmStats stats() const override {
    AlgorithmStats s;
    s.update_seconds = update_.total();
    return s;
  }

  at::Tensor optimizer_state() override { return optimizer_.momentum_buffer(); }

 private:
  optim::FlatParameters& flat_;
  Timeline& timeline_;
  optim::MomentumSgd optimizer_;
  Stopwatch update_;
};

}  // namespace

AlgorithmInfo single_process_sgd_algorithm() {
  AlgorithmInfo info;
  info.name = "sgd";
  info.description = "single-process momentum SGD (the reference)";
  info.single_process = true;
  info.make_worker = [](const WorkerSetup& s) { return std::make_unique<LocalSgd>(s); };
  return info;
}

}  // namespace distsgd::algo
