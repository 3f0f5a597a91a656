// The decentralized algorithms in the discrete-event simulator, as algo/decentralized/ runs them (each over the whole
// model, m bytes, on the worker's own links; peers from core/peer_topology, the real topologies):
//   GoSGD, gossip push   after the local step, with probability p (gossip push: 1) a push to a random peer; the
//                        sender does not wait (up to 8 pushes in flight, then for the oldest); what arrived is merged
//                        before the next forward (push_gossip.cpp)
//   SGP                  the same to the exponential graph's peer every iteration; iteration t then waits until
//                        the messages of iterations <= t - overlap have arrived, and merges them
//   gossip pull          the pull of a random peer's model starts before forward (the peer's serving thread
//                        replies); after backward the worker waits for it, averages and steps (pull_gossip.cpp)
//   AD-PSGD              odd ranks (active) run a communication thread: after each update it exchanges the model
//                        with the next neighbour (send m, the passive side averages under its model lock and replies m,
//                        the active side averages under its own), and the next update waits for the exchange started
//                        after the previous one; even ranks (passive) only compute (adpsgd.cpp)
// A merge or an average is one pass over the model, charged at the profile's update cost per byte.
#include <algorithm>
#include <string>
#include <vector>

#include "distsgd/core/error.hpp"
#include "distsgd/core/peer_topology.hpp"
#include "distsgd/sim/des/workload.hpp"

namespace distsgd::sim {
namespace {

// GoSGD, gossip push and SGP (PushGossip).
class PushGossip final : public Workload {
 public:
  // SGP when `sgp_overlap` >= 0 (its lag), else GoSGD or gossip push as the context's algorithm says.
  PushGossip(DesContext& c, int64_t sgp_overlap)
      : c_(c),
        exponential_(sgp_overlap >= 0),
        probability_(c.settings.algorithm == "gosgd" ? c.settings.gossip_probability : 1.0),
        wait_lag_(sgp_overlap),
        inbox_(static_cast<size_t>(c.workers)),
        received_(static_cast<size_t>(c.workers), 0),
        in_flight_(static_cast<size_t>(c.workers), 0),
        waiter_(static_cast<size_t>(c.workers)) {}

  void before_forward(int64_t worker, int64_t step, Next next) override { merge(worker, step, std::move(next)); }

  void after_backward(int64_t worker, int64_t step, Next next) override {
    c_.run(worker, "update", c_.update_seconds(worker, c_.model_bytes()), [this, worker, step, next] {
      if (probability_ >= 1 || c_.variability[static_cast<size_t>(worker)].uniform() < probability_) {
        const int64_t peer = exponential_
                                 ? topology::peer_at(topology::Topology::kExponential, worker, c_.workers, step)
                                 : topology::random_peer(c_.settings.seed, worker, c_.workers, step);
        push(worker, peer, step, [this, worker, step, next] { after_push(worker, step, next); });
      } else {
        after_push(worker, step, next);
      }
    });
  }

 private:
  static constexpr int64_t kMostPushesInFlight = 8;  // EndpointOptions::max_pushes_in_flight

  void push(int64_t worker, int64_t peer, int64_t step, Next next) {
    const double start = c_.queue.now();
    ++in_flight_[static_cast<size_t>(worker)];
    // The peer's receiving thread reads the header before it posts the payload's receive (protocol.cpp).
    const bool read_header_first = true;
    c_.send_between_workers(
        worker, peer, c_.model_bytes(),
        [this, worker, peer, step] {
          --in_flight_[static_cast<size_t>(worker)];
          inbox_[static_cast<size_t>(peer)].push_back(step);
          ++received_[static_cast<size_t>(peer)];
          wake(worker);
          wake(peer);
        },
        read_header_first);
    wait_until(
        worker, [this, worker] { return in_flight_[static_cast<size_t>(worker)] <= kMostPushesInFlight; },
        [this, worker, start, next] {
          c_.span(worker, "push", start);
          next();
        });
  }

  void after_push(int64_t worker, int64_t step, Next next) {
    if (wait_lag_ < 0) return next();
    const double start = c_.queue.now();
    const int64_t needed = step + 1 - wait_lag_;
    wait_until(
        worker, [this, worker, needed] { return received_[static_cast<size_t>(worker)] >= needed; },
        [this, worker, step, start, next] {
          c_.span(worker, "wait for messages", start);
          merge(worker, step, next);
        });
  }

  // Merges what arrived; records each message's age (this worker's iteration less the sender's, 0 when the sender
  // was ahead), as PushGossip::merge_arrived does.
  void merge(int64_t worker, int64_t step, Next next) {
    auto& inbox = inbox_[static_cast<size_t>(worker)];
    if (inbox.empty()) return next();
    const auto messages = static_cast<double>(inbox.size());
    if (c_.measuring(worker)) {
      for (const int64_t sent : inbox) ++c_.staleness[std::max<int64_t>(0, step - sent)];
    }
    inbox.clear();
    c_.run(worker, "merge", c_.update_seconds(worker, messages * c_.model_bytes()), next);
  }

  // The training thread blocks until `ready` holds (checked whenever a message of this worker's moves).
  void wait_until(int64_t worker, std::function<bool()> ready, Next next) {
    if (ready()) return next();
    waiter_[static_cast<size_t>(worker)] = {std::move(ready), std::move(next)};
  }
  void wake(int64_t worker) {
    auto& w = waiter_[static_cast<size_t>(worker)];
    if (!w.ready || !w.ready()) return;
    Next next = std::move(w.next);
    w = {};
    next();
  }

  struct Waiter {
    std::function<bool()> ready;
    Next next;
  };
  DesContext& c_;
  bool exponential_;
  double probability_;
  int64_t wait_lag_;
  std::vector<std::vector<int64_t>> inbox_;  // per worker: the iterations of the messages not merged yet
  std::vector<int64_t> received_;            // per worker: messages received in all
  std::vector<int64_t> in_flight_;           // per worker: its pushes not delivered yet
  std::vector<Waiter> waiter_;
};

// Gossiping SGD, pull variant (PullGossip).
class PullGossip final : public Workload {
 public:
  explicit PullGossip(DesContext& c)
      : c_(c), pending_(static_cast<size_t>(c.workers), 0), waiter_(static_cast<size_t>(c.workers)) {}

  void before_forward(int64_t worker, int64_t step, Next next) override {
    const int64_t peer = topology::random_peer(c_.settings.seed, worker, c_.workers, step);
    pending_[static_cast<size_t>(worker)] = 1;
    // The request (a header), then the peer's serving thread replies with its model.
    c_.send_between_workers(worker, peer, 0, [this, worker, peer] {
      c_.send_between_workers(peer, worker, c_.model_bytes(), [this, worker] {
        pending_[static_cast<size_t>(worker)] = 0;
        if (Next next = std::move(waiter_[static_cast<size_t>(worker)])) {
          waiter_[static_cast<size_t>(worker)] = nullptr;
          next();
        }
      });
    });
    next();
  }

  void after_backward(int64_t worker, int64_t, Next next) override {
    const double start = c_.queue.now();
    Next average = [this, worker, start, next] {
      c_.span(worker, "wait for pull", start);
      c_.run(worker, "average and update", c_.update_seconds(worker, 2 * c_.model_bytes()), next);
    };
    if (!pending_[static_cast<size_t>(worker)]) return average();
    waiter_[static_cast<size_t>(worker)] = std::move(average);
  }

 private:
  DesContext& c_;
  std::vector<char> pending_;  // per worker: its pull has not been answered
  std::vector<Next> waiter_;
};

// AD-PSGD (Adpsgd).
class Adpsgd final : public Workload {
 public:
  explicit Adpsgd(DesContext& c) : c_(c), state_(static_cast<size_t>(c.workers)) {
    lock_.reserve(static_cast<size_t>(c.workers));
    for (int64_t w = 0; w < c.workers; ++w) lock_.emplace_back(c.queue);
  }

  void after_backward(int64_t worker, int64_t step, Next next) override {
    State& s = state_[static_cast<size_t>(worker)];
    if (!topology::is_active(worker)) return update(worker, next);
    // The exchange started after the previous update must be done before this update.
    const double start = c_.queue.now();
    Next go_on = [this, worker, step, start, next] {
      c_.span(worker, "wait for exchange", start);
      update(worker, [this, worker, step, next] {
        State& s = state_[static_cast<size_t>(worker)];
        s.requested = step + 1;
        if (!s.exchanging) exchange(worker);
        next();
      });
    };
    if (s.completed >= s.requested) return go_on();
    s.waiter = std::move(go_on);
  }

 private:
  struct State {
    int64_t requested = 0, completed = 0;
    bool exchanging = false;
    Next waiter;  // the training thread, waiting for an exchange
  };

  // The optimizer step on x under the model lock.
  void update(int64_t worker, Next next) {
    const double seconds = c_.update_seconds(worker, c_.model_bytes());
    lock_[static_cast<size_t>(worker)].submit(
        seconds, nullptr, [this, worker, seconds, next] { c_.run(worker, "update", seconds, next); });
  }

  // The communication thread's exchange number `completed` with its neighbour for that step.
  void exchange(int64_t worker) {
    State& s = state_[static_cast<size_t>(worker)];
    s.exchanging = true;
    const int64_t peer = topology::peer_at(topology::Topology::kBipartiteExponential, worker, c_.workers, s.completed);
    if (peer < 0) return finish_exchange(worker);  // no neighbour of the other parity (n = 2 with an odd rank alone)
    const double m = c_.model_bytes();
    c_.send_between_workers(worker, peer, m, [this, worker, peer, m] {
      // The passive side: average under its lock (its receiving thread for this peer), reply with its model.
      lock_[static_cast<size_t>(peer)].submit(c_.update_seconds(peer, m), [this, worker, peer, m](double) {
        c_.send_between_workers(peer, worker, m, [this, worker, m] {
          lock_[static_cast<size_t>(worker)].submit(c_.update_seconds(worker, m),
                                                    [this, worker](double) { finish_exchange(worker); });
        });
      });
    });
  }

  void finish_exchange(int64_t worker) {
    State& s = state_[static_cast<size_t>(worker)];
    ++s.completed;
    s.exchanging = false;
    if (s.completed < s.requested) exchange(worker);
    if (s.waiter && s.completed >= s.requested) {
      Next waiter = std::move(s.waiter);
      s.waiter = nullptr;
      waiter();
    }
  }

  DesContext& c_;
  std::vector<State> state_;
  std::vector<FifoResource> lock_;  // per worker: its model's lock
};

}  // namespace

std::unique_ptr<Workload> make_decentralized_workload(DesContext& c) {
  const auto& a = c.settings.algorithm;
  if (a == "sgp") return std::make_unique<PushGossip>(c, c.settings.sgp_overlap);
  if (a == "gosgd" || (a == "gossip" && c.settings.gossip_mode == "push")) return std::make_unique<PushGossip>(c, -1);
  if (a == "gossip") return std::make_unique<PullGossip>(c);
  if (a == "adpsgd") return std::make_unique<Adpsgd>(c);
  throw Error("simulator: '" + a + "' is not a decentralized algorithm");
}

std::unique_ptr<Workload> make_sgp_gossip_workload(DesContext& c) { return std::make_unique<PushGossip>(c, 0); }

}  // namespace distsgd::sim
