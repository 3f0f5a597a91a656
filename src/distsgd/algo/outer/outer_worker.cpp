// localsgd, slowmo and diloco (spec: "The low-communication family"): each worker steps its own model with the
// inner optimizer (--optimizer: momentum SGD or AdamW), and the outer loop (outer_loop.hpp) exchanges every H steps.
// The three differ only in the outer rule and the flags they take:
// - localsgd (periodic averaging; Lin et al., "Don't use large mini-batches, use local SGD", ICLR 2020): x = mean.
// - slowmo (Wang et al., ICLR 2020; fairscale's SlowMoDistributedDataParallel): slow momentum on the exact average
//   every H steps, over local SGD (--base localsgd) or over SGP (--base sgp: slowmo_over_sgp.hpp). The inner
//   optimizer's momentum stays each worker's own (not reset, not averaged).
// - diloco (Douillard et al., 2023; torchft's DiLoCo; Streaming DiLoCo, Douillard et al., 2025, with --fragments,
//   --fragment-delay, --fragment-alpha and --outer-bits): outer Nesterov SGD on the mean pseudo-gradient.
// The workers' models differ between exchanges: the run evaluates their average and worker 0's own model, as for
// the decentralized algorithms.
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/algo/compression/compression_options.hpp"
#include "distsgd/algo/compression/powersgd.hpp"
#include "distsgd/algo/outer/outer_loop.hpp"
#include "distsgd/algo/outer/outer_options.hpp"
#include "distsgd/algo/outer/slowmo_over_sgp.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/timed_phase.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/optim/worker_optimizer.hpp"

#include <nlohmann/json.hpp>

namespace distsgd::algo {
namespace {

using outer::OuterRule;

outer::OuterSettings settings_of(const WorkerSetup& s, OuterRule rule, compression::PowerSgdCompressor* powersgd) {
  outer::OuterSettings settings;
  settings.rule = rule;
  settings.sync_every = outer::kSyncEvery.of(s.config);
  if (rule == OuterRule::kNesterov) {
    settings.lr = outer::kOuterLr.of(s.config);
    settings.momentum = outer::kOuterMomentum.of(s.config);
    std::vector<outer::Fragment> parameters;
    for (const auto& slot : s.flat.slots()) parameters.push_back({slot.offset, slot.numel});
    settings.fragments = outer::fragments_of(parameters, outer::kFragments.of(s.config));
    settings.delay = outer::kFragmentDelay.of(s.config);
    settings.alpha = outer::kFragmentAlpha.of(s.config);
    settings.bits = outer::kOuterBits.of(s.config);
    if (powersgd) {
      comm::Communicator* comm = s.comm;
      settings.mean_of_workers = [powersgd, comm](at::Tensor& payload, int64_t exchange) {
        return powersgd->allreduce_mean(payload, exchange, comm);
      };
    }
  } else if (rule == OuterRule::kSlowMo) {
    settings.lr = outer::kSlowLr.of(s.config);
    settings.momentum = outer::kSlowMomentum.of(s.config);
  }
  return settings;
}

class OuterWorker final : public WorkerAlgorithm {
 public:
  OuterWorker(const WorkerSetup& s, OuterRule rule)
      : powersgd_(compression::powersgd_enabled(s.config) ? std::make_unique<compression::PowerSgdCompressor>(
                                                                compression::powersgd_compressor(s.model, s.config))
                                                          : nullptr),
        flat_(s.flat),
        timeline_(s.timeline),
        inner_(optim::make_worker_optimizer(s.config, s.flat.numel())),
        outer_(s.comm, s.flat.params(), settings_of(s, rule, powersgd_.get())) {}

  void after_backward(int64_t, double lr) override {
    {
      TimedPhase phase(timeline_, "update", update_);
      inner_->step(flat_.params(), flat_.grads(), lr);
    }
    last_lr_ = lr;
    Timeline::Scope span(timeline_, "outer");
    outer_.after_inner_step(lr);
  }

  void end_training() override { outer_.complete_in_flight(last_lr_); }

  AlgorithmStats stats() const override {
    AlgorithmStats s;
    s.update_seconds = update_.total() + outer_.update_seconds();
    s.communication_wait_seconds = outer_.wait_seconds();
    s.bytes_sent = outer_.bytes_sent();
    return s;
  }

  void add_to_summary(nlohmann::json& summary, const std::vector<nlohmann::json>&) override {
    summary["outer_exchanges"] = outer_.exchanges();
  }

  optim::WorkerOptimizer* worker_optimizer() override { return inner_.get(); }
  void save_state(AlgorithmState& state) override {
    WorkerAlgorithm::save_state(state);
    outer_.save_state(state);
    if (powersgd_) powersgd_->save_state(state);
  }
  void load_state(const AlgorithmState& state) override {
    WorkerAlgorithm::load_state(state);
    outer_.load_state(state);
    if (powersgd_) powersgd_->load_state(state);
  }

 private:
  std::unique_ptr<compression::PowerSgdCompressor> powersgd_;  // DiLoCo's pseudo-gradients with --compress powersgd
  optim::FlatParameters& flat_;
  Timeline& timeline_;
  std::unique_ptr<optim::WorkerOptimizer> inner_;
  outer::OuterLoop outer_;
  Stopwatch update_;
  double last_lr_ = 0;
};

AlgorithmInfo outer_algorithm(std::string name, std::string description, OuterRule rule,
                              std::vector<const OptionSpec*> options) {
  AlgorithmInfo info;
  info.name = std::move(name);
  info.description = std::move(description);
  info.decentralized = true;    // the models differ between exchanges
  info.takes_optimizer = true;  // the inner steps are the worker's own (--optimizer adamw: DiLoCo's inner AdamW)
  info.options = std::move(options);
  info.make_worker = [rule](const WorkerSetup& s) { return std::make_unique<OuterWorker>(s, rule); };
  return info;
}

}  // namespace

AlgorithmInfo localsgd_algorithm() {
  return outer_algorithm("localsgd", "local SGD: H local steps, then the models are averaged (allreduce)",
                         OuterRule::kAverage, {&outer::kSyncEvery.spec()});
}

AlgorithmInfo slowmo_algorithm() {
  auto info = outer_algorithm(
      "slowmo", "SlowMo: local SGD (or SGP, --base sgp) with slow momentum on the exact average every H steps",
      OuterRule::kSlowMo,
      {&outer::kSyncEvery.spec(), &outer::kSlowLr.spec(), &outer::kSlowMomentum.spec(), &outer::kSlowMoBase.spec()});
  info.make_worker = [](const WorkerSetup& s) -> std::unique_ptr<WorkerAlgorithm> {
    if (outer::kSlowMoBase.of(s.config) == outer::SlowMoBase::kSgp) {
      return outer::make_slowmo_over_sgp(s, settings_of(s, OuterRule::kSlowMo, nullptr));
    }
    return std::make_unique<OuterWorker>(s, OuterRule::kSlowMo);
  };
  return info;
}

AlgorithmInfo diloco_algorithm() {
  auto info = outer_algorithm(
      "diloco",
      "DiLoCo: H inner steps, outer Nesterov SGD on the mean pseudo-gradient; Streaming DiLoCo with --fragments",
      OuterRule::kNesterov,
      {&outer::kSyncEvery.spec(), &outer::kOuterLr.spec(), &outer::kOuterMomentum.spec(), &outer::kFragments.spec(),
       &outer::kFragmentDelay.spec(), &outer::kFragmentAlpha.spec(), &outer::kOuterBits.spec(),
       &compression::kCompress.spec(), &compression::kPowerSgdRank.spec(), &compression::kPowerSgdStart.spec()});
  info.validate = [](const TrainConfig& c) {
    const int64_t h = outer::kSyncEvery.of(c), f = outer::kFragments.of(c), delay = outer::kFragmentDelay.of(c);
    require(h % f == 0, "--sync-every " + std::to_string(h) + " is not a multiple of --fragments " + std::to_string(f) +
                            " (each fragment is synchronised every H/F steps)");
    require(delay < h / f, "--fragment-delay " + std::to_string(delay) + " must be below --sync-every / --fragments (" +
                               std::to_string(h / f) + "): a fragment's exchange must end before its next one");
    // PowerSGD (Vogels et al.) compresses the pseudo-gradient as AR-SGD's gradient: the whole model, in floats, at
    // the exchange (outer steps count as its steps: --powersgd-start N exchanges are plain).
    require(!compression::dgc_enabled(c),
            "--compress dgc selects gradient entries per step: diloco takes none or powersgd");
    require(!compression::powersgd_enabled(c) || (f == 1 && delay == 0 && outer::kOuterBits.of(c) == 32),
            "--compress powersgd with diloco compresses the whole pseudo-gradient at its exchange: leave out "
            "--fragments, --fragment-delay and --outer-bits");
  };
  return info;
}

}  // namespace distsgd::algo
