#include "distsgd/algo/decentralized/pull_gossip.hpp"

#include "distsgd/algo/decentralized/mixing.hpp"
#include "distsgd/algo/decentralized/protocol.hpp"
#include "distsgd/algo/decentralized/topology.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/timer.hpp"
#include "distsgd/train/flat_parameters.hpp"
#include "distsgd/train/sgd.hpp"
#include "distsgd/train/timeline.hpp"

#include <torch/torch.h>

#include <mutex>

namespace distsgd::algo::decentralized {
namespace {

// What the serving threads read: the live parameters, or during an evaluation (when the trainer puts other
// values in them) the copy taken just before.
struct ServedModel {
  std::mutex mutex;
  at::Tensor params;
  at::Tensor frozen;  // defined while evaluating
};

class PullGossip final : public WorkerAlgorithm {
 public:
  explicit PullGossip(const WorkerSetup& s)
      : flat_(s.flat),
        timeline_(s.timeline),
        rank_(s.comm->rank()),
        workers_(s.comm->workers()),
        seed_(s.config.seed),
        optimizer_(s.flat.numel(), s.config.momentum, s.config.weight_decay),
        pulled_(torch::empty({s.flat.numel()})),
        initial_sum_(s.flat.params().sum(torch::kFloat64).item<double>()),
        served_(make_served(s)),
        endpoint_(*s.comm, endpoint_options(s), handlers(served_)) {}

  void before_forward(int64_t step) override {
    waiting_.start();
    pending_ = endpoint_.pull(random_peer(seed_, rank_, workers_, step), step, pulled_);
    waiting_.stop();
  }

  void after_backward(int64_t, double lr) override {
    {
      train::Timeline::Scope span(timeline_, "wait for pull");
      waiting_.start();
      pending_.wait();
      waiting_.stop();
    }
    train::Timeline::Scope span(timeline_, "average and update");
    update_.start();
    std::lock_guard<std::mutex> lock(served_->mutex);
    average_into(flat_.params(), pulled_);
    optimizer_.step(flat_.params(), flat_.grads(), lr);
    update_.stop();
  }

  void before_evaluation() override {
    std::lock_guard<std::mutex> lock(served_->mutex);
    served_->frozen = flat_.params().detach().clone();
  }

  void after_evaluation() override {
    std::lock_guard<std::mutex> lock(served_->mutex);
    served_->frozen = at::Tensor();
  }

  void finish() override {
    waiting_.start();
    endpoint_.finish();
    waiting_.stop();
  }

  AlgorithmStats stats() const override {
    AlgorithmStats s;
    s.communication_wait_seconds = waiting_.total();
    s.update_seconds = update_.total();
    s.bytes_sent = endpoint_.bytes_sent();
    s.per_worker_values = {
        {"parameter_sum", flat_.params().sum(torch::kFloat64).item<double>()},
        {"initial_parameter_sum", initial_sum_},
        {"pulls", static_cast<double>(endpoint_.messages_sent())},
        {"pulls_served", static_cast<double>(endpoint_.requests_served())},
    };
    return s;
  }

  at::Tensor optimizer_state() override { return optimizer_.momentum_buffer(); }

 private:
  static std::shared_ptr<ServedModel> make_served(const WorkerSetup& s) {
    auto served = std::make_shared<ServedModel>();
    served->params = s.flat.params();  // shares storage with the model
    return served;
  }

  static EndpointOptions endpoint_options(const WorkerSetup& s) {
    EndpointOptions e;
    e.numel = s.flat.numel();
    e.contacts = out_neighbors(Topology::kRandom, s.comm->rank(), s.comm->workers());
    e.listeners = in_neighbors(Topology::kRandom, s.comm->rank(), s.comm->workers());
    e.test_delay_ms = s.config.test_delay_ms;
    e.seed = s.config.seed * 131 + static_cast<uint64_t>(s.comm->rank());
    return e;
  }

  static GossipHandlers handlers(const std::shared_ptr<ServedModel>& served) {
    GossipHandlers h;
    h.on_pull = [served](int64_t) {
      std::lock_guard<std::mutex> lock(served->mutex);
      return (served->frozen.defined() ? served->frozen : served->params).detach().clone();
    };
    return h;
  }

  train::FlatParameters& flat_;
  train::Timeline& timeline_;
  int64_t rank_, workers_;
  uint64_t seed_;
  train::MomentumSgd optimizer_;  // momentum lives here, local to the worker
  at::Tensor pulled_;
  double initial_sum_;
  Stopwatch waiting_, update_;
  PendingReply pending_;
  std::shared_ptr<ServedModel> served_;
  GossipEndpoint endpoint_;  // last: its threads start once everything above exists
};

}  // namespace

std::unique_ptr<WorkerAlgorithm> make_pull_gossip(const WorkerSetup& setup) {
  require(setup.comm != nullptr && setup.comm->workers() >= 2,
          "--algo gossip is decentralized: use --workers 2 or more");
  return std::make_unique<PullGossip>(setup);
}

}  // namespace distsgd::algo::decentralized
