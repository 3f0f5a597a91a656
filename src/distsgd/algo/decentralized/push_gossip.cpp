#include "distsgd/algo/decentralized/push_gossip.hpp"

#include "distsgd/algo/decentralized/gossip_worker.hpp"
#include "distsgd/algo/decentralized/inbox.hpp"
#include "distsgd/algo/decentralized/mixing.hpp"
#include "distsgd/algo/decentralized/protocol.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/timed_phase.hpp"
#include "distsgd/core/timeline.hpp"
#include "distsgd/core/timer.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/optim/sgd.hpp"

#include <ATen/core/Tensor.h>

#include <random>

namespace distsgd::algo::decentralized {
namespace {

double sum_of(const at::Tensor& t) { return t.sum(at::kDouble).item<double>(); }

class PushGossip final : public GossipWorker {
 public:
  PushGossip(const WorkerSetup& s, PushGossipOptions options)
      : GossipWorker(s),
        comm_(*s.comm),
        options_(options),
        weight_(1.0 / static_cast<double>(workers_)),
        coin_(s.config.seed * 1000003 + static_cast<uint64_t>(rank_)),
        inbox_(std::make_shared<Inbox>()),
        endpoint_(*s.comm, endpoint_options(s, options.topology), handlers(inbox_)) {}

  void before_forward(int64_t step) override {
    step_ = step;
    merge_arrived();
  }

  void after_backward(int64_t step, double lr) override {
    {
      TimedPhase phase(timeline_, "update", update_);
      optimizer_.step(flat_.params(), flat_.grads(), lr);
    }
    if (options_.send_probability >= 1 || std::bernoulli_distribution(options_.send_probability)(coin_)) {
      TimedPhase phase(timeline_, "push", waiting_);
      const int64_t peer = peer_at(options_.topology, rank_, workers_, step, seed_);
      const double sent_weight = split_weight(weight_);
      endpoint_.push(peer, step, sent_weight, flat_.params().detach().clone());
    }
    endpoint_.keep_alive();
    if (options_.wait_lag >= 0) {
      TimedPhase phase(timeline_, "wait for messages", waiting_);
      inbox_->wait_for_received(step + 1 - options_.wait_lag - resumed_steps_, comm_.timeout(),
                                [this] { endpoint_.check(); });
      merge_arrived();
    }
  }

  // Before the final evaluation: every message lands first, so the evaluated average sum_i w_i z_i / sum_i w_i is
  // over all the mass (the weights sum to 1 again).
  void end_training() override { finish(); }

  void finish() override {
    finish_endpoint(endpoint_);
    merge_arrived();  // nothing is in flight any more: the weights sum to 1 again
  }

  double model_weight() const override { return weight_; }
  // Push-sum mass still in flight when a checkpoint is taken is not in it (the weights then sum to less than 1).
  void save_state(AlgorithmState& state) override {
    GossipWorker::save_state(state);
    state.put_real("push_sum_weight", weight_);
    state.put_integer("gossip_steps_done", step_ + 1);
  }
  void load_state(const AlgorithmState& state) override {
    GossipWorker::load_state(state);
    weight_ = state.real("push_sum_weight");
    // The inbox counts this run's messages only: the peers' resumed iterations.
    resumed_steps_ = state.integer("gossip_steps_done");
  }

 private:
  const GossipEndpoint& endpoint() const override { return endpoint_; }
  std::vector<std::pair<std::string, double>> figures() const override {
    return {
        {"gossip_weight", weight_},
        // sum_i w_i * sum(z_i) over the workers is conserved by every send and merge when lr = 0.
        {"weighted_parameter_sum", weight_ * sum_of(flat_.params())},
        {"initial_parameter_sum", initial_sum_},
        {"messages_sent", static_cast<double>(endpoint_.messages_sent())},
        {"messages_received", static_cast<double>(inbox_->received())},
    };
  }

  static GossipHandlers handlers(const std::shared_ptr<Inbox>& inbox) {
    GossipHandlers h;
    h.on_push = [inbox](PushMessage m) { inbox->put(std::move(m)); };
    return h;
  }

  void merge_arrived() {
    auto messages = inbox_->take_all();
    if (messages.empty()) return;
    TimedPhase phase(timeline_, "merge", update_);
    for (const auto& m : messages) {
      weighted_merge(flat_.params(), weight_, m.values, m.weight);
      endpoint_.record_age(step_ - m.step);
    }
  }

  comm::Communicator& comm_;
  PushGossipOptions options_;
  double weight_;              // the push-sum weight w_i; the optimizer's momentum is over z
  int64_t step_ = 0;           // the iteration under way (the age of a merged message is step_ less the sender's)
  int64_t resumed_steps_ = 0;  // a resumed run: the iterations before it (its inbox counts from there)
  std::mt19937_64 coin_;
  std::shared_ptr<Inbox> inbox_;  // held by the receiving threads too
  GossipEndpoint endpoint_;       // last: its threads start once everything above exists
};

}  // namespace

std::unique_ptr<WorkerAlgorithm> make_push_gossip(const WorkerSetup& setup, PushGossipOptions options) {
  require(setup.comm != nullptr && setup.comm->workers() >= 2,
          "--algo " + setup.config.algorithm + " is decentralized: use --workers 2 or more");
  return std::make_unique<PushGossip>(setup, options);
}

}  // namespace distsgd::algo::decentralized
