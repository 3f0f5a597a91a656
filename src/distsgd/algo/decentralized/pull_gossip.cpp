#include "distsgd/algo/decentralized/pull_gossip.hpp"

#include "distsgd/algo/decentralized/gossip_worker.hpp"
#include "distsgd/algo/decentralized/mixing.hpp"
#include "distsgd/algo/decentralized/protocol.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/peer_topology.hpp"
#include "distsgd/core/runtime.hpp"
#include "distsgd/core/timed_phase.hpp"
#include "distsgd/core/timeline.hpp"
#include "distsgd/core/timer.hpp"
#include "distsgd/optim/flat_parameters.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

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

class PullGossip final : public GossipWorker {
 public:
  explicit PullGossip(const WorkerSetup& s)
      : GossipWorker(s),
        pulled_(at::empty({s.flat.numel()})),
        served_(make_served(s)),
        endpoint_(*s.comm, endpoint_options(s, topology::Topology::kRandom), handlers(served_)) {}

  void before_forward(int64_t step) override {
    endpoint_.set_step(step);
    waiting_.start();
    // A random live peer; with none left, this worker trains alone.
    const int64_t peer = live_peer(topology::Topology::kRandom, step);
    pulling_ = peer >= 0;
    if (pulling_) pending_ = endpoint_.pull(peer, step, pulled_);
    waiting_.stop();
  }

  void after_backward(int64_t, double lr) override {
    bool pulled = false;
    if (pulling_) {
      TimedPhase phase(timeline_, "wait for pull", waiting_);
      pulled = pending_.wait();
      // The peer failed and was declared lost: keep this model for this step; its reply buffer may still be
      // written by a late receive, so take a fresh one.
      if (!pulled) pulled_ = at::empty({flat_.numel()});
    }
    TimedPhase phase(timeline_, "average and update", update_);
    // On a simulated device the average costs a pass like the update's (the DES charges both); spent before the
    // lock, which the serving thread takes too (spending virtual time yields). Nothing in a real run.
    if (pulled) runtime::spend_parameter_pass(static_cast<double>(flat_.numel()));
    std::lock_guard<std::mutex> lock(served_->mutex);
    if (pulled) average_into(flat_.params(), pulled_);
    optimizer_->step(flat_.params(), flat_.grads(), lr);
  }

  void before_evaluation() override {
    std::lock_guard<std::mutex> lock(served_->mutex);
    served_->frozen = flat_.params().detach().clone();
  }

  void after_evaluation() override {
    std::lock_guard<std::mutex> lock(served_->mutex);
    served_->frozen = at::Tensor();
  }

  void finish() override { finish_endpoint(endpoint_); }

 private:
  const GossipEndpoint& endpoint() const override { return endpoint_; }
  std::vector<std::pair<std::string, double>> figures() const override {
    return {
        {"parameter_sum", flat_.params().sum(at::kDouble).item<double>()},
        {"initial_parameter_sum", initial_sum_},
        {"pulls", static_cast<double>(endpoint_.messages_sent())},
        {"pulls_served", static_cast<double>(endpoint_.requests_served())},
    };
  }

  static std::shared_ptr<ServedModel> make_served(const WorkerSetup& s) {
    auto served = std::make_shared<ServedModel>();
    served->params = s.flat.params();  // shares storage with the model
    return served;
  }

  static GossipHandlers handlers(const std::shared_ptr<ServedModel>& served) {
    GossipHandlers h;
    h.on_pull = [served](int64_t) {
      std::lock_guard<std::mutex> lock(served->mutex);
      return (served->frozen.defined() ? served->frozen : served->params).detach().clone();
    };
    return h;
  }

  at::Tensor pulled_;
  PendingReply pending_;
  bool pulling_ = false;  // pending_ is this iteration's pull
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
