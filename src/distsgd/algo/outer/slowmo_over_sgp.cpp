#include "distsgd/algo/outer/slowmo_over_sgp.hpp"

#include "distsgd/algo/decentralized/push_gossip.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/timeline.hpp"
#include "distsgd/optim/flat_parameters.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <utility>

namespace distsgd::algo::outer {
namespace {

class SlowMoOverSgp final : public WorkerAlgorithm {
 public:
  SlowMoOverSgp(const WorkerSetup& s, OuterSettings settings)
      : workers_(s.comm ? s.comm->worker_count() : 1),
        timeline_(s.timeline),
        outer_(s.comm, s.flat.params(), std::move(settings)),
        // SGP without overlap (wait lag 0), each message merged at the iteration it was sent: see the header.
        sgp_(decentralized::make_push_gossip(s, {topology::Topology::kExponential, 1.0, 0, true},
                                             [this](double lr) { average(lr); })) {}

  void before_forward(int64_t step) override { sgp_->before_forward(step); }
  void before_backward(int64_t step, double lr) override { sgp_->before_backward(step, lr); }
  void after_backward(int64_t step, double lr) override { sgp_->after_backward(step, lr); }
  void before_evaluation() override { sgp_->before_evaluation(); }
  void after_evaluation() override { sgp_->after_evaluation(); }
  void end_training() override { sgp_->end_training(); }
  void finish() override { sgp_->finish(); }

  AlgorithmStats stats() const override {
    auto s = sgp_->stats();
    s.update_seconds += outer_.update_seconds();
    s.communication_wait_seconds += outer_.wait_seconds();
    s.bytes_sent += outer_.bytes_sent();
    return s;
  }
  void add_to_summary(nlohmann::json& summary, const std::vector<nlohmann::json>& server_statistics) override {
    sgp_->add_to_summary(summary, server_statistics);
    summary["outer_exchanges"] = outer_.exchanges();
  }
  optim::WorkerOptimizer* worker_optimizer() override { return sgp_->worker_optimizer(); }
  void save_state(AlgorithmState& state) override {
    sgp_->save_state(state);
    outer_.save_state(state);
  }
  void load_state(const AlgorithmState& state) override {
    sgp_->load_state(state);
    outer_.load_state(state);
  }
  double model_weight() const override { return sgp_->model_weight(); }

 private:
  // After SGP's iteration (its messages merged): the outer loop's step, which every H steps replaces the models by
  // the slow momentum update of their exact average.
  void average(double lr) {
    // The weights are 1/n whenever nothing is in flight (see the header): the plain mean is the push-sum average.
    require(std::abs(sgp_->model_weight() * static_cast<double>(workers_) - 1) < 1e-12,
            "slowmo over sgp: a push-sum weight is not 1/n at an exchange");
    Timeline::Scope span(timeline_, "outer");
    outer_.after_inner_step(lr);
  }

  int64_t workers_;
  Timeline& timeline_;
  OuterLoop outer_;
  std::unique_ptr<WorkerAlgorithm> sgp_;  // last: its receiving threads start once everything above exists
};

}  // namespace

std::unique_ptr<WorkerAlgorithm> make_slowmo_over_sgp(const WorkerSetup& setup, OuterSettings settings) {
  require(settings.rule == OuterRule::kSlowMo, "SGP is a base of SlowMo only");
  return std::make_unique<SlowMoOverSgp>(setup, std::move(settings));
}

}  // namespace distsgd::algo::outer
