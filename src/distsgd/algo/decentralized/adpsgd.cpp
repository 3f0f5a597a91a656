#include "distsgd/algo/decentralized/adpsgd.hpp"

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
#include <thread>

namespace distsgd::algo::decentralized {
namespace {

// The worker's model x_i, shared by the compute thread, the communication thread and the receiving threads.
struct LockedModel {
  std::mutex mutex;
  at::Tensor x;
  int64_t exchanges_served = 0;
};

class Adpsgd final : public GossipWorker {
 public:
  explicit Adpsgd(const WorkerSetup& s)
      : GossipWorker(s),
        active_(topology::is_active(rank_)),
        timeout_(exchange_timeout(s)),
        model_(make_model(s)),
        endpoint_(*s.comm, endpoint_options(s, topology::Topology::kBipartiteExponential), handlers(model_)) {
    if (active_) communication_thread_ = runtime::Thread("exchanges", [this] { communicate(); });
  }

  ~Adpsgd() override { stop_communication(); }

  void before_forward(int64_t step) override {
    endpoint_.set_step(step);
    std::lock_guard<std::mutex> lock(model_->mutex);
    flat_.params().detach().copy_(model_->x);
  }

  void after_backward(int64_t step, double lr) override {
    if (active_) {
      // The exchange started after the previous update must be done before this update (bounded staleness).
      TimedPhase phase(timeline_, "wait for exchange", waiting_);
      wait_until([&] { return completed_ >= requested_; });
    }
    {
      TimedPhase phase(timeline_, "update", update_);
      std::lock_guard<std::mutex> lock(model_->mutex);
      optimizer_->step(model_->x, flat_.grads(), lr);
    }
    if (active_) {
      std::lock_guard<std::mutex> lock(state_mutex_);
      requested_ = step + 1;
      state_changed_.notify_all();
    }
  }

  // The model is x, which the passive side's receiving thread averages into at any time: it is saved under the
  // model's lock, replacing the flat parameters train/ saved (a resumed worker's x starts from those, restored
  // before this algorithm is made).
  void save_state(AlgorithmState& state) override {
    GossipWorker::save_state(state);
    std::lock_guard<std::mutex> lock(model_->mutex);
    state.put("parameters", model_->x);
  }

  void before_evaluation() override {
    if (active_) wait_until([&] { return completed_ >= requested_; });
    std::lock_guard<std::mutex> lock(model_->mutex);
    flat_.params().detach().copy_(model_->x);
  }

  void finish() override {
    waiting_.start();
    if (active_) wait_until([&] { return completed_ >= requested_; });
    stop_communication();
    endpoint_.finish();
    waiting_.stop();
    std::lock_guard<std::mutex> lock(model_->mutex);
    flat_.params().detach().copy_(model_->x);
  }

 private:
  const GossipEndpoint& endpoint() const override { return endpoint_; }
  std::vector<std::pair<std::string, double>> figures() const override {
    std::lock_guard<std::mutex> lock(model_->mutex);
    return {
        {"parameter_sum", model_->x.sum(at::kDouble).item<double>()},
        {"initial_parameter_sum", initial_sum_},
        {"exchanges_initiated", static_cast<double>(endpoint_.messages_sent())},
        {"exchanges_served", static_cast<double>(model_->exchanges_served)},
    };
  }

  // An exchange fails within the timeout; when the run goes on without lost workers, one with a peer that hung
  // is then dropped once that peer is declared lost (within the silence limit and a few beats).
  static std::chrono::milliseconds exchange_timeout(const WorkerSetup& s) {
    const auto* liveness = s.comm->liveness();
    // Rank 1 (a worker, as every decentralized rank) stands for any worker but 0: may the run go on without it?
    if (liveness == nullptr || !liveness->survivable(1)) return s.comm->timeout();
    return s.comm->timeout() +
           std::chrono::milliseconds(static_cast<int64_t>(liveness->silence_seconds() * 1000) + 3000);
  }

  static std::shared_ptr<LockedModel> make_model(const WorkerSetup& s) {
    auto model = std::make_shared<LockedModel>();
    model->x = s.flat.params().detach().clone();
    return model;
  }

  // Passive side: average atomically, reply with the model from before.
  static GossipHandlers handlers(const std::shared_ptr<LockedModel>& model) {
    GossipHandlers h;
    h.on_exchange = [model](int64_t, const at::Tensor& values) {
      // On a simulated device an average costs a pass, as the DES charges it: before the lock (it yields).
      runtime::spend_parameter_pass(static_cast<double>(values.numel()));
      std::lock_guard<std::mutex> lock(model->mutex);
      auto before = model->x.clone();
      average_into(model->x, values);
      ++model->exchanges_served;
      return before;
    };
    return h;
  }

  // Active side: one exchange per requested iteration, on its own thread.
  void communicate() {
    auto reply = at::empty({flat_.numel()});
    try {
      while (true) {
        int64_t step = 0;
        {
          std::unique_lock<std::mutex> lock(state_mutex_);
          state_changed_.wait(
              lock, [&] { return stopping_ || completed_ < requested_; }, "an exchange to make");
          if (completed_ >= requested_) return;  // stopping, nothing left to do
          step = completed_;
        }
        // The next live passive neighbour; with none left, this worker trains alone (the step counts as done).
        const int64_t peer = live_peer(topology::Topology::kBipartiteExponential, step);
        if (peer >= 0) {
          at::Tensor sent;
          {
            std::lock_guard<std::mutex> lock(model_->mutex);
            sent = model_->x.clone();
          }
          if (endpoint_.exchange(peer, step, sent, reply).wait()) {
            runtime::spend_parameter_pass(static_cast<double>(reply.numel()));  // as the passive side's
            std::lock_guard<std::mutex> lock(model_->mutex);
            average_with_sent(model_->x, sent, reply);
          } else {
            // The peer failed and was declared lost: this step keeps this model; a late receive may still write
            // the old reply buffer.
            reply = at::empty({flat_.numel()});
          }
        }
        std::lock_guard<std::mutex> lock(state_mutex_);
        ++completed_;
        state_changed_.notify_all();
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(state_mutex_);
      error_ = std::string("AD-PSGD exchange: ") + e.what();
      state_changed_.notify_all();
    }
  }

  // Waits (bounded by the timeout) for the communication thread; rethrows its error.
  template <typename Predicate>
  void wait_until(Predicate done) {
    std::unique_lock<std::mutex> lock(state_mutex_);
    const bool ok = state_changed_.wait_for(
        lock, timeout_, [&] { return done() || !error_.empty(); }, "its exchange");
    if (!error_.empty()) throw Error(error_);
    require(ok,
            "AD-PSGD: no exchange completed within " + std::to_string(timeout_.count() / 1000) + " s (see --timeout)");
  }

  void stop_communication() {
    if (!communication_thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(state_mutex_);
      stopping_ = true;
      state_changed_.notify_all();
    }
    communication_thread_.join();
  }

  bool active_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<LockedModel> model_;
  GossipEndpoint endpoint_;

  std::mutex state_mutex_;
  runtime::Condition state_changed_;
  int64_t requested_ = 0, completed_ = 0;  // exchanges asked for by the compute thread / done
  bool stopping_ = false;
  std::string error_;
  runtime::Thread communication_thread_;  // last: started once everything above exists
};

}  // namespace

std::unique_ptr<WorkerAlgorithm> make_adpsgd(const WorkerSetup& setup) {
  require(setup.comm != nullptr && setup.comm->workers() >= 2,
          "--algo adpsgd is decentralized: use --workers 2 or more (odd ranks active, even ranks passive)");
  return std::make_unique<Adpsgd>(setup);
}

}  // namespace distsgd::algo::decentralized
