#include "distsgd/algo/decentralized/push_gossip.hpp"

#include "distsgd/algo/decentralized/inbox.hpp"
#include "distsgd/algo/decentralized/mixing.hpp"
#include "distsgd/algo/decentralized/protocol.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/timer.hpp"
#include "distsgd/train/flat_parameters.hpp"
#include "distsgd/train/sgd.hpp"
#include "distsgd/train/timeline.hpp"

#include <torch/torch.h>

#include <random>

namespace distsgd::algo::decentralized {
namespace {

double sum_of(const at::Tensor& t) { return t.sum(torch::kFloat64).item<double>(); }

class PushGossip final : public WorkerAlgorithm {
 public:
  PushGossip(const WorkerSetup& s, PushGossipOptions options)
      : comm_(*s.comm),
        flat_(s.flat),
        timeline_(s.timeline),
        options_(options),
        rank_(s.comm->rank()),
        workers_(s.comm->workers()),
        seed_(s.config.seed),
        optimizer_(s.flat.numel(), s.config.momentum, s.config.weight_decay),
        weight_(1.0 / static_cast<double>(workers_)),
        coin_(s.config.seed * 1000003 + static_cast<uint64_t>(rank_)),
        initial_sum_(sum_of(s.flat.params())),
        inbox_(std::make_shared<Inbox>()),
        endpoint_(*s.comm, endpoint_options(s, options), handlers(inbox_)) {}

  void before_forward(int64_t) override { merge_arrived(); }

  void after_backward(int64_t step, double lr) override {
    {
      train::Timeline::Scope span(timeline_, "update");
      update_.start();
      optimizer_.step(flat_.params(), flat_.grads(), lr);
      update_.stop();
    }
    if (options_.send_probability >= 1 || std::bernoulli_distribution(options_.send_probability)(coin_)) {
      train::Timeline::Scope span(timeline_, "push");
      waiting_.start();
      const int64_t peer = peer_at(options_.topology, rank_, workers_, step, seed_);
      const double sent_weight = split_weight(weight_);
      endpoint_.push(peer, step, sent_weight, flat_.params().detach().clone());
      waiting_.stop();
    }
    endpoint_.keep_alive();
    if (options_.wait_lag >= 0) {
      train::Timeline::Scope span(timeline_, "wait for messages");
      waiting_.start();
      inbox_->wait_for_received(step + 1 - options_.wait_lag, comm_.timeout(), [this] { endpoint_.check(); });
      waiting_.stop();
      merge_arrived();
    }
  }

  void finish() override {
    waiting_.start();
    endpoint_.finish();
    waiting_.stop();
    merge_arrived();  // nothing is in flight any more: the weights sum to 1 again
  }

  AlgorithmStats stats() const override {
    AlgorithmStats s;
    s.communication_wait_seconds = waiting_.total();
    s.update_seconds = update_.total();
    s.bytes_sent = endpoint_.bytes_sent();
    s.per_worker_values = {
        {"gossip_weight", weight_},
        // sum_i w_i * sum(z_i) over the workers is conserved by every send and merge when lr = 0.
        {"weighted_parameter_sum", weight_ * sum_of(flat_.params())},
        {"initial_parameter_sum", initial_sum_},
        {"messages_sent", static_cast<double>(endpoint_.messages_sent())},
        {"messages_received", static_cast<double>(inbox_->received())},
    };
    return s;
  }

  at::Tensor optimizer_state() override { return optimizer_.momentum_buffer(); }

 private:
  static EndpointOptions endpoint_options(const WorkerSetup& s, const PushGossipOptions& o) {
    EndpointOptions e;
    e.numel = s.flat.numel();
    e.contacts = out_neighbors(o.topology, s.comm->rank(), s.comm->workers());
    e.listeners = in_neighbors(o.topology, s.comm->rank(), s.comm->workers());
    e.test_delay_ms = s.config.test_delay_ms;
    e.seed = s.config.seed * 131 + static_cast<uint64_t>(s.comm->rank());
    return e;
  }

  static GossipHandlers handlers(const std::shared_ptr<Inbox>& inbox) {
    GossipHandlers h;
    h.on_push = [inbox](PushMessage m) { inbox->put(std::move(m)); };
    return h;
  }

  void merge_arrived() {
    auto messages = inbox_->take_all();
    if (messages.empty()) return;
    train::Timeline::Scope span(timeline_, "merge");
    update_.start();
    for (const auto& m : messages) weighted_merge(flat_.params(), weight_, m.values, m.weight);
    update_.stop();
  }

  comm::Communicator& comm_;
  train::FlatParameters& flat_;
  train::Timeline& timeline_;
  PushGossipOptions options_;
  int64_t rank_, workers_;
  uint64_t seed_;
  train::MomentumSgd optimizer_;  // momentum lives here, local to the worker, over z
  double weight_;
  std::mt19937_64 coin_;
  double initial_sum_;
  Stopwatch waiting_, update_;
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
