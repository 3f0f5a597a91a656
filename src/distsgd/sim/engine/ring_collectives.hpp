// Collectives over the workers as their steps on the flow network (spec/simulator.md, "Two fidelities" 2, and the
// cost formulas of Thakur, Rabenseifner and Gropp in collective_costs.hpp), as Gloo runs them:
//   ring allreduce        2(P-1) steps; step s sends m/P to the ring successor once this worker's send of step
//                         s-1 is done and the predecessor's block of step s-1 has arrived (and, in the
//                         reduce-scatter half, been reduced: gamma per byte)
//   ring reduce-scatter   the first P-1 of those steps; ring allgather the last P-1
//   pairwise alltoall     P-1 steps, step s sends m/P to rank + s + 1 (AR-SGD multistep's reduce-scatter)
// On an idle network of equal links each step takes alpha + (m/P) beta, so the totals are the formulas.
// Per-step simulation costs P flows per step; for large P the `kFlows` model instead runs each collective as P
// concurrent flows (worker -> ring successor, carrying that worker's whole volume) after the steps' latency, once
// every worker has joined: the same time on an idle network, contention at flow level, no per-step skew.
// A cluster whose allreduce latency grows as a tree's (ClusterDescription::allreduce_latency) keeps these steps and
// bytes; each allreduce step's start-up is scaled so the 2(P-1) steps pay 2 log2(P) start-ups.
// Each worker runs its collectives one at a time in the order it launched them (one communicator); the i-th
// collective a worker launches is the i-th of every other worker, as on a real process group.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "distsgd/sim/engine/event_queue.hpp"
#include "distsgd/sim/engine/flow_network.hpp"
#include "distsgd/sim/platform/cluster_network.hpp"

namespace distsgd::sim {

enum class CollectiveKind { kAllreduce, kReduceScatter, kAllgather, kAlltoall };
enum class CollectiveModel { kSteps, kFlows };

// Steps of a collective over P processes, and the bytes each process sends (m the collective's size).
int64_t collective_steps(CollectiveKind kind, int64_t processes);
double collective_bytes_sent(CollectiveKind kind, int64_t processes, double bytes);

class RingCollectives {
 public:
  RingCollectives(EventQueue& queue, FlowNetwork& network, const ClusterNetwork& cluster, int64_t workers,
                  double gamma_seconds_per_byte, CollectiveModel model);

  // Worker `worker` launches its next collective; `started` (optional) runs when this worker begins it (its
  // earlier collectives done), `done` when its part is over.
  void launch(int64_t worker, CollectiveKind kind, double bytes, std::function<void()> done,
              std::function<void()> started = nullptr);

  // Each block (steps: `delay()` as it arrives), or each collective's latency (flows: `mean_delay()` per step, as
  // the collective starts), arrives this much later: a busy receiver's scheduling delay
  // (ClusterDescription::busy_delivery; 0 while a core is free).
  void set_delivery_delay(std::function<double()> delay, std::function<double()> mean_delay);

  // A step a worker sends to another node while `computing(worker)` costs `seconds` more than alpha
  // (ClusterDescription::interference_alpha_seconds); flows: the collective's latency, as its members computed
  // when it started.
  void set_interference(std::function<bool(int64_t worker)> computing, double seconds);

 private:
  struct Member {
    bool launched = false, joined = false, sending = false, reducing = false, finished = false;
    int64_t sent = 0;              // sends completed
    int64_t ready = 0;             // blocks received (and reduced) in step order
    std::vector<uint8_t> arrived;  // per step (pairwise alltoall blocks may arrive out of order)
    std::function<void()> done, started;
  };
  struct Instance {
    CollectiveKind kind = CollectiveKind::kAllreduce;
    double bytes = 0;
    int64_t steps = 0, joined = 0, finished = 0, flows_left = 0;
    std::vector<Member> members;
  };

  Instance& instance(int64_t index);
  void maybe_join(int64_t worker);
  void advance(int64_t index, int64_t worker);
  void block_arrived(int64_t index, int64_t worker, int64_t step);
  void pump(int64_t index, int64_t worker);  // takes arrived blocks in step order, reducing where needed
  void start_flows(int64_t index);
  void finish_member(int64_t index, int64_t worker);
  int64_t send_peer(CollectiveKind kind, int64_t worker, int64_t step) const;
  bool reduces_after(const Instance& in, int64_t step) const;
  // The start-up of one step of a `kind` collective from `worker` to `peer`, interference included (an allreduce's
  // scaled by the cluster's allreduce_alpha_scale: a tree's 2 log2(P) start-ups over the ring's 2(P-1) steps).
  double step_alpha(CollectiveKind kind, int64_t worker, int64_t peer) const;

  EventQueue& queue_;
  std::function<double()> delivery_delay_;
  std::function<double()> mean_delivery_delay_;
  std::function<bool(int64_t)> computing_;
  double interference_ = 0;
  FlowNetwork& network_;
  const ClusterNetwork& cluster_;
  int64_t workers_;
  double gamma_;
  double allreduce_alpha_scale_;
  double handover_;  // ClusterDescription::collective_handover_seconds at this many workers, on every step
  CollectiveModel model_;
  std::deque<Instance> instances_;  // instances_[0] is collective number first_
  int64_t first_ = 0;
  std::vector<int64_t> launched_;  // collectives each worker has launched
  std::vector<int64_t> current_;   // the collective each worker is in or will join next
};

}  // namespace distsgd::sim
