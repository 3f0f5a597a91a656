#include "distsgd/algo/decentralized/push_gossip.hpp"

#include "distsgd/algo/decentralized/gossip_worker.hpp"
#include "distsgd/algo/decentralized/inbox.hpp"
#include "distsgd/algo/decentralized/mixing.hpp"
#include "distsgd/algo/decentralized/protocol.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/runtime.hpp"
#include "distsgd/core/timed_phase.hpp"
#include "distsgd/core/timeline.hpp"
#include "distsgd/core/timer.hpp"
#include "distsgd/optim/flat_parameters.hpp"

#include <ATen/core/Tensor.h>

#include <algorithm>
#include <chrono>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <utility>

namespace distsgd::algo::decentralized {
namespace {

double sum_of(const at::Tensor& t) { return t.sum(at::kDouble).item<double>(); }

// The iterations s in [first, last] with s mod period == phase.
int64_t count_in_phase(int64_t first, int64_t last, int64_t period, int64_t phase) {
  const auto up_to = [&](int64_t x) { return x < phase ? 0 : (x - phase) / period + 1; };
  return last < first ? 0 : up_to(last) - up_to(first - 1);
}

// Per sender, the messages that arrived on their scheduled edge of the topology (the sender's peer_at was this
// worker); a message redirected here because the sender's own peer was lost is merged but not counted.
class ScheduledArrivals {
 public:
  void add(int64_t sender) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++count_[sender];
    ++arrived_;
    changed_.notify_all();
  }
  int64_t count(int64_t sender) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = count_.find(sender);
    return it == count_.end() ? 0 : it->second;
  }
  int64_t arrived() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return arrived_;
  }
  // Until another counted message arrives after `seen` of them did, or 50 ms (a peer may be declared lost).
  void wait_after(int64_t seen) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(
        lock, std::chrono::milliseconds(50), [&] { return arrived_ != seen; }, "an in-neighbour's message");
  }

 private:
  mutable std::mutex mutex_;
  runtime::Condition changed_;
  std::map<int64_t, int64_t> count_;
  int64_t arrived_ = 0;
};

class PushGossip final : public GossipWorker {
 public:
  PushGossip(const WorkerSetup& s, PushGossipOptions options, AfterMerge after_merge)
      : GossipWorker(s),
        comm_(*s.comm),
        options_(options),
        after_merge_(std::move(after_merge)),
        weight_(1.0 / static_cast<double>(workers_)),
        coin_(s.config.seed * 1000003 + static_cast<uint64_t>(rank_)),
        inbox_(std::make_shared<Inbox>()),
        arrivals_(std::make_shared<ScheduledArrivals>()),
        endpoint_(*s.comm, endpoint_options(s, options.topology),
                  handlers(inbox_, arrivals_, options.topology, rank_, workers_, seed_)) {
    // SGP's wait: each in-neighbour j sends here on its hop k, at the iterations s with s mod hops == k.
    if (options_.wait_lag >= 0) {
      require(options_.topology == topology::Topology::kExponential, "push gossip waits on the exponential graph only");
      const int64_t hops = topology::exponential_hops(workers_);
      for (int64_t j : topology::in_neighbors(options_.topology, rank_, workers_)) {
        for (int64_t k = 0; k < hops; ++k) {
          if (topology::peer_at(options_.topology, j, workers_, k) == rank_) sender_phase_[j] = k;
        }
      }
    }
  }

  void before_forward(int64_t step) override {
    step_ = step;
    merge_arrived(step - 1);
  }

  void after_backward(int64_t step, double lr) override {
    {
      TimedPhase phase(timeline_, "update", update_);
      optimizer_->step(flat_.params(), flat_.grads(), lr);
    }
    if (options_.send_probability >= 1 || std::bernoulli_distribution(options_.send_probability)(coin_)) {
      TimedPhase phase(timeline_, "push", waiting_);
      // A lost peer is skipped; with none left, the push is not made and the weight stays here.
      const int64_t peer = live_peer(options_.topology, step);
      if (peer >= 0) {
        const double sent_weight = split_weight(weight_);
        endpoint_.push(peer, step, sent_weight, flat_.params().detach().clone());
      }
    }
    if (options_.wait_lag >= 0) {
      TimedPhase phase(timeline_, "wait for messages", waiting_);
      wait_for_scheduled(step - options_.wait_lag);
      merge_arrived(step);
    }
    if (after_merge_) after_merge_(lr);
  }

  // Before the final evaluation: every message lands first, so the evaluated average sum_i w_i z_i / sum_i w_i is
  // over all the mass (the weights sum to 1 again).
  void end_training() override { finish(); }

  void finish() override {
    finish_endpoint(endpoint_);
    merge_arrived(std::numeric_limits<int64_t>::max());  // nothing is in flight any more: the weights sum to 1 again
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

  static GossipHandlers handlers(const std::shared_ptr<Inbox>& inbox,
                                 const std::shared_ptr<ScheduledArrivals>& arrivals, topology::Topology topology,
                                 int64_t rank, int64_t workers, uint64_t seed) {
    GossipHandlers h;
    h.on_push = [inbox, arrivals, topology, rank, workers, seed](PushMessage m) {
      const bool scheduled = topology::peer_at(topology, m.sender, workers, m.step, seed) == rank;
      const int64_t sender = m.sender;
      inbox->put(std::move(m));
      if (scheduled) arrivals->add(sender);  // after put: a counted message is in the inbox
    };
    return h;
  }

  // SGP: waits, bounded by the timeout, until every in-neighbour that is not lost delivered the messages it
  // sends here at this run's iterations up to `last_step` (a lost one's never come).
  void wait_for_scheduled(int64_t last_step) {
    const auto deadline = Clock::now() + comm_.timeout();
    const int64_t hops = topology::exponential_hops(workers_);
    while (true) {
      endpoint_.check();
      const int64_t seen = arrivals_->arrived();
      int64_t missing = -1;
      for (const auto& [sender, phase] : sender_phase_) {
        if (is_lost(sender)) continue;
        if (arrivals_->count(sender) < count_in_phase(resumed_steps_, last_step, hops, phase)) {
          missing = sender;
          break;
        }
      }
      if (missing < 0) return;
      require(Clock::now() < deadline, "waited " + std::to_string(comm_.timeout().count() / 1000) +
                                           " s for the message of iteration " + std::to_string(last_step) +
                                           " or earlier from rank " + std::to_string(missing) +
                                           " (a peer is stuck or died; see --timeout)");
      arrivals_->wait_after(seen);
    }
  }

  // Merges what arrived: everything, or with hold_later_messages what was sent at iterations <= last_step, in the
  // order sent (the rest waits in held_).
  void merge_arrived(int64_t last_step) {
    auto messages = inbox_->take_all();
    if (options_.hold_later_messages) {
      held_.insert(held_.end(), std::make_move_iterator(messages.begin()), std::make_move_iterator(messages.end()));
      std::stable_sort(held_.begin(), held_.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
      const auto later = std::find_if(held_.begin(), held_.end(), [&](const auto& m) { return m.step > last_step; });
      messages.assign(std::make_move_iterator(held_.begin()), std::make_move_iterator(later));
      held_.erase(held_.begin(), later);
    }
    if (messages.empty()) return;
    TimedPhase phase(timeline_, "merge", update_);
    for (const auto& m : messages) {
      weighted_merge(flat_.params(), weight_, m.values, m.weight);
      endpoint_.record_age(step_ - m.step);
    }
    // A merge costs the simulated device an optimizer-sized pass per message, as the DES charges it (no lock is
    // held here; a real run spends nothing).
    runtime::spend_parameter_pass(static_cast<double>(flat_.numel()) * static_cast<double>(messages.size()));
  }

  comm::Communicator& comm_;
  PushGossipOptions options_;
  AfterMerge after_merge_;
  double weight_;              // the push-sum weight w_i; the optimizer's momentum is over z
  int64_t step_ = 0;           // the iteration under way (the age of a merged message is step_ less the sender's)
  int64_t resumed_steps_ = 0;  // a resumed run: the iterations before it (its inbox counts from there)
  std::mt19937_64 coin_;
  std::shared_ptr<Inbox> inbox_;                 // held by the receiving threads too
  std::vector<PushMessage> held_;                // hold_later_messages: arrived, sent at a later iteration
  std::shared_ptr<ScheduledArrivals> arrivals_;  // likewise
  std::map<int64_t, int64_t> sender_phase_;      // SGP: in-neighbour -> the hop on which it sends here
  GossipEndpoint endpoint_;                      // last: its threads start once everything above exists
};

}  // namespace

std::unique_ptr<WorkerAlgorithm> make_push_gossip(const WorkerSetup& setup, PushGossipOptions options,
                                                  AfterMerge after_merge) {
  require(setup.comm != nullptr && setup.comm->workers() >= 2,
          "--algo " + setup.config.algorithm + " is decentralized: use --workers 2 or more");
  return std::make_unique<PushGossip>(setup, options, std::move(after_merge));
}

}  // namespace distsgd::algo::decentralized
