// An algorithm added from outside distsgd's tree: this file is the whole of it, built into a program of its own
// (CMakeLists.txt: distsgd_extension_example) that is distsgd plus this algorithm. Every command knows it with no
// change to src/: `train` (real processes and --virtual), `simulate` (both fidelities), `study`, `validate` and
// `advise` (its recipe), in this process and in every child those commands start (they run /proc/self/exe).
// tests/extension_seam_test.cpp runs each of them on it.
//
// The algorithm: AR-SGD without overlap whose learning rate is scaled by --shrink. After backward, one allreduce of
// the whole gradient; then the worker's optimizer (--optimizer, momentum, weight decay) steps with lr * shrink on the
// mean gradient. --shrink 1 is `arsgd --overlap none`, bit for bit; --shrink 0 never moves the parameters.
//
// An algorithm registers four things, each in the layer that owns it:
//   algo::register_algorithm          its code: the worker (and server) side and the flags it takes;
//   catalog::register_algorithm       what the simulator and the harness ask of it: family and capabilities;
//   sim::register_algorithm_model     its closed form (analytical fidelity) and its protocol in the DES;
//   experiment::register_recipe       the flags it runs with when validate and advise compare algorithms.
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/catalog/algorithm_catalog.hpp"
#include "distsgd/cli/program.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/option.hpp"
#include "distsgd/core/timed_phase.hpp"
#include "distsgd/experiment/algorithm_recipes.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/optim/worker_optimizer.hpp"
#include "distsgd/sim/algorithm_predictions.hpp"
#include "distsgd/sim/analytical/synchronous_model.hpp"
#include "distsgd/sim/des/collective_work.hpp"
#include "distsgd/sim/des/workload.hpp"

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

namespace {

using namespace distsgd;

constexpr const char* kName = "shrunk-allreduce";

// Its own flag, declared where the algorithm lives: on the command line, in --help and in config.json.
const StoredOption<double> kShrink{"--shrink", 1.0, "shrunk-allreduce: factor on every step", within<double>(0, 1)};

// The worker side.
class ShrunkAllreduce final : public algo::WorkerAlgorithm {
 public:
  explicit ShrunkAllreduce(const algo::WorkerSetup& s)
      : comm_(s.comm),
        flat_(s.flat),
        timeline_(s.timeline),
        shrink_(kShrink.of(s.config)),
        optimizer_(optim::make_worker_optimizer(s.config, s.flat.numel())) {}

  void after_backward(int64_t, double lr) override {
    const double workers = comm_ == nullptr ? 1.0 : static_cast<double>(comm_->worker_count());
    if (workers > 1) {
      TimedPhase phase(timeline_, "allreduce", waiting_, Timeline::kCommunication);
      comm_->allreduce_sum(flat_.grads()).wait();
      bytes_sent_ += static_cast<int64_t>(2 * (workers - 1) / workers * 4.0 * static_cast<double>(flat_.numel()));
    }
    TimedPhase phase(timeline_, "update", updating_);
    optimizer_->step(flat_.params(), flat_.grads(), lr * shrink_, 0, workers);  // the mean, in the same pass
  }

  optim::WorkerOptimizer* worker_optimizer() override { return optimizer_.get(); }  // checkpoints carry its state

  algo::AlgorithmStats stats() const override {
    algo::AlgorithmStats s;
    s.communication_wait_seconds = waiting_.total();
    s.update_seconds = updating_.total();
    s.bytes_sent = bytes_sent_;
    return s;
  }

 private:
  comm::Communicator* comm_;
  optim::FlatParameters& flat_;
  Timeline& timeline_;
  double shrink_;
  std::unique_ptr<optim::WorkerOptimizer> optimizer_;
  Stopwatch waiting_, updating_;
  int64_t bytes_sent_ = 0;
};

// Its protocol in the discrete-event simulator: after backward, one ring allreduce of the model's bytes, then the
// update (as AR-SGD's --overlap none, allreduce_workload.cpp).
class ShrunkAllreduceWorkload final : public sim::Workload {
 public:
  explicit ShrunkAllreduceWorkload(sim::DesContext& c) : c_(c), reductions_(static_cast<size_t>(c.workers)) {}

  void after_backward(int64_t worker, int64_t, sim::Next next) override {
    const double bytes = c_.model_bytes();
    auto update = [this, worker, bytes, next] { c_.run(worker, "update", c_.update_seconds(worker, bytes), next); };
    if (c_.workers == 1) return update();
    auto& work = reductions_[static_cast<size_t>(worker)];
    sim::launch_collective(c_, worker, sim::CollectiveKind::kAllreduce, bytes, "allreduce", work);
    sim::wait_for(c_, worker, work, update);
  }

 private:
  sim::DesContext& c_;
  std::vector<sim::CollectiveWork> reductions_;  // per worker
};

void register_shrunk_allreduce() {
  algo::AlgorithmInfo info;
  info.name = kName;
  info.description = "AR-SGD without overlap, every step scaled by --shrink (examples/extension)";
  info.takes_optimizer = true;
  info.options = {&kShrink.spec()};
  info.make_worker = [](const algo::WorkerSetup& s) { return std::make_unique<ShrunkAllreduce>(s); };
  algo::register_algorithm(info);

  catalog::AlgorithmEntry entry;
  entry.name = kName;
  entry.family = catalog::Family::kSynchronous;
  catalog::register_algorithm(entry);

  sim::register_algorithm_model({kName,
                                 [](const sim::SimulatorSettings& c, const sim::ModelProfile& profile,
                                    const sim::ClusterDescription& cluster, int64_t workers) {
                                   constexpr double kMB = 1024.0 * 1024.0;
                                   return sim::predict_allreduce_sgd(
                                       profile, workers, cluster,
                                       sim::allreduce_settings("none", c.bucket_mb * kMB, c.first_bucket_mb * kMB));
                                 },
                                 [](sim::DesContext& c) { return std::make_unique<ShrunkAllreduceWorkload>(c); },
                                 {"--shrink"}});  // scales the step, not its time: a study predicts runs with any value

  experiment::register_recipe({kName, {"--shrink", "0.5"}});
}

}  // namespace

int main(int argc, char** argv) {
  register_shrunk_allreduce();
  return cli::program_main(argc, argv);
}
