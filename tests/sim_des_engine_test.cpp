// The discrete-event simulator's engine (spec/simulator.md, "Two fidelities" 2): the event queue's order, FIFO
// resources, the flow network's max-min fair sharing on hand-worked networks, and collectives on an idle ring against
// their cost formulas.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "distsgd/core/error.hpp"
#include "distsgd/sim/analytical/collective_costs.hpp"
#include "distsgd/sim/engine/event_queue.hpp"
#include "distsgd/sim/engine/fifo_resource.hpp"
#include "distsgd/sim/engine/flow_network.hpp"
#include "distsgd/sim/engine/ring_collectives.hpp"
#include "distsgd/sim/platform/cluster_network.hpp"

namespace distsgd::sim {
namespace {

TEST(DesEventQueue, RunsByTimeThenInTheOrderScheduledAndEndsEachInstantOnce) {
  EventQueue queue;
  std::vector<int> order;
  std::vector<double> instants;
  queue.set_batch_hook([&] { instants.push_back(queue.now()); });
  queue.at(2, [&] { order.push_back(3); });
  queue.at(1, [&] { order.push_back(1); });
  queue.at(1, [&] {
    order.push_back(2);
    queue.after(0, [&] { order.push_back(20); });  // same instant, after what was already there
  });
  queue.run();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 20, 3}));
  EXPECT_EQ(instants, (std::vector<double>{1, 2}));
  EXPECT_EQ(queue.events_run(), 4);
  EXPECT_THROW(queue.at(1, [] {}), Error);  // the past
}

TEST(DesFifoResource, RunsOneTaskAtATimeInSubmissionOrder) {
  EventQueue queue;
  FifoResource resource(queue);
  std::vector<std::pair<double, double>> spans;  // start, end
  for (double seconds : {1.0, 0.5, 2.0}) {
    resource.submit(seconds, [&](double start) { spans.emplace_back(start, queue.now()); });
  }
  queue.at(10, [&] { resource.submit(1, [&](double start) { spans.emplace_back(start, queue.now()); }); });
  queue.run();
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_EQ(spans[0], std::make_pair(0.0, 1.0));
  EXPECT_EQ(spans[1], std::make_pair(1.0, 1.5));
  EXPECT_EQ(spans[2], std::make_pair(1.5, 3.5));
  EXPECT_EQ(spans[3], std::make_pair(10.0, 11.0));
  EXPECT_DOUBLE_EQ(resource.busy_seconds(), 4.5);
}

struct Arrivals {
  EventQueue queue;
  FlowNetwork network{queue};
  std::vector<double> at;
  void send(std::vector<PortId> ports, double bytes, double latency = 0) {
    Path path;
    for (PortId p : ports) path.add(p);
    const size_t i = at.size();
    at.push_back(-1);
    network.transfer(path, bytes, latency, [this, i] { at[i] = queue.now(); });
  }
};

// One flow alone: alpha, then the bytes at the slowest port's rate.
TEST(DesFlowNetwork, ALoneTransferTakesAlphaPlusBytesOverTheSlowestLink) {
  Arrivals a;
  const PortId fast = a.network.add_port(100), slow = a.network.add_port(10);
  a.send({fast, slow}, 50, 0.25);
  a.queue.run();
  EXPECT_DOUBLE_EQ(a.at[0], 0.25 + 5);
  EXPECT_DOUBLE_EQ(a.network.carried_bytes(slow), 50);
}

// Link X (1 B/s) carries f1 and f2, link Y (2 B/s) carries f2 and f3. Max-min: X's share 0.5 fixes f1 and f2, f3 takes
// Y's remaining 1.5. f1 (1 B) and f3 (3 B) end at t = 2; f2 (2 B) has 1 B left, then runs alone at 1 B/s (X) and ends
// at t = 3.
TEST(DesFlowNetwork, MaxMinFairSharingOnAHandWorkedNetwork) {
  Arrivals a;
  const PortId x = a.network.add_port(1), y = a.network.add_port(2);
  a.send({x}, 1);
  a.send({x, y}, 2);
  a.send({y}, 3);
  a.queue.run();
  EXPECT_NEAR(a.at[0], 2, 1e-9);
  EXPECT_NEAR(a.at[1], 3, 1e-9);
  EXPECT_NEAR(a.at[2], 2, 1e-9);
  EXPECT_NEAR(a.network.carried_bytes(x), 3, 1e-9);
  EXPECT_NEAR(a.network.carried_bytes(y), 5, 1e-9);
}

// A flow starting later takes its share from then on; the earlier one speeds up again when it ends.
TEST(DesFlowNetwork, RatesChangeWhenFlowsStartAndEnd) {
  Arrivals a;
  const PortId link = a.network.add_port(10);
  a.send({link}, 20);       // alone 0-1 s (10 B), shared 1-3 s (10 B): ends at 3
  a.send({link}, 10, 1.0);  // starts at 1, shared: 5 B/s for 2 s: ends at 3
  a.queue.run();
  EXPECT_NEAR(a.at[0], 3, 1e-9);
  EXPECT_NEAR(a.at[1], 3, 1e-9);
}

// P workers push m to one server: the server's NIC carries P*m, m*P/B_server (spec, "Validation").
TEST(DesFlowNetwork, IncastAtOneServer) {
  Arrivals a;
  const PortId server_in = a.network.add_port(1e9);
  for (int w = 0; w < 8; ++w) a.send({a.network.add_port(1e9), server_in}, 4e6);
  a.queue.run();
  for (double t : a.at) EXPECT_NEAR(t, 8 * 4e6 / 1e9, 1e-12);
  EXPECT_LE(a.network.rate_recomputations(),
            3);  // the starts, and the ends, each coalesced into one
}

// Arrival times of random transfers into one server's link (some from slow links, which the server's share does not
// always undercut, some to a second server through the same senders), and what each port carried.
std::pair<std::vector<double>, std::vector<double>> random_incast(bool groups) {
  EventQueue queue;
  FlowNetwork network(queue, groups);
  const PortId server = network.add_port(1e9), other_server = network.add_port(5e8);
  std::vector<PortId> senders;
  for (int w = 0; w < 40; ++w) senders.push_back(network.add_port(w % 10 == 0 ? 2e7 : 1e9));
  std::mt19937 random(3);
  std::uniform_real_distribution<double> start(0, 0.05), size(1e5, 4e6);
  std::vector<double> at(120, -1);
  for (size_t i = 0; i < at.size(); ++i) {
    Path path;
    path.add(senders[i % senders.size()]);
    path.add(i % 17 == 0 ? other_server : server);
    network.transfer(path, size(random), start(random), [&, i] { at[i] = queue.now(); });
  }
  std::vector<double> carried;
  queue.at(0.03, [&] {
    for (size_t p = 0; p < network.port_count(); ++p) carried.push_back(network.carried_bytes(static_cast<PortId>(p)));
  });
  queue.run();
  return {at, carried};
}

// A link shared by many flows that it limits becomes a group (processor sharing by a virtual clock): the same
// arrivals, and the same bytes carried, as recomputing the max-min rates at every change.
TEST(DesFlowNetwork, GroupsGiveWhatRecomputingEveryChangeGives) {
  const auto [grouped, grouped_carried] = random_incast(true);
  const auto [recomputed, recomputed_carried] = random_incast(false);
  ASSERT_EQ(grouped.size(), recomputed.size());
  for (size_t i = 0; i < grouped.size(); ++i) {
    EXPECT_GT(grouped[i], 0) << i;
    EXPECT_NEAR(grouped[i], recomputed[i], 1e-9 * recomputed[i]) << i;
  }
  for (size_t p = 0; p < grouped_carried.size(); ++p) {
    EXPECT_NEAR(grouped_carried[p], recomputed_carried[p], 1e-6 * std::max(1.0, recomputed_carried[p])) << p;
  }
}

double run_collective(CollectiveKind kind, int64_t workers, double bytes, CollectiveModel model,
                      const ClusterDescription& cluster) {
  EventQueue queue;
  FlowNetwork network(queue);
  ClusterNetwork ports(network, cluster, workers, 0, {});
  RingCollectives collectives(queue, network, ports, workers, cluster.gamma_seconds_per_byte, model);
  double last = 0;
  for (int64_t w = 0; w < workers; ++w) {
    collectives.launch(w, kind, bytes, [&] { last = std::max(last, queue.now()); });
  }
  queue.run();
  return last;
}

ClusterDescription flat_cluster() {
  ClusterDescription c;
  c.worker_bytes_per_second = c.server_bytes_per_second = 1.25e9;
  c.alpha_seconds = 5e-5;
  c.gamma_seconds_per_byte = 2e-10;
  return c;
}

TEST(DesCollectives, OneRingAllreduceOnAnIdleRingIsItsFormula) {
  const auto c = flat_cluster();
  const double m = 8e6;
  for (const auto model : {CollectiveModel::kSteps, CollectiveModel::kFlows}) {
    for (int64_t p : {2, 3, 4, 8}) {
      EXPECT_NEAR(run_collective(CollectiveKind::kAllreduce, p, m, model, c),
                  ring_allreduce_seconds(c.allreduce_cost(), p, m), 1e-9)
          << p;
      EXPECT_NEAR(run_collective(CollectiveKind::kReduceScatter, p, m, model, c),
                  ring_reduce_scatter_seconds(c.allreduce_cost(), p, m), 1e-9);
      EXPECT_NEAR(run_collective(CollectiveKind::kAllgather, p, m, model, c),
                  ring_allgather_seconds(c.allreduce_cost(), p, m), 1e-9);
      EXPECT_NEAR(run_collective(CollectiveKind::kAlltoall, p, m, model, c),
                  pairwise_alltoall_seconds(c.allreduce_cost(), p, m), 1e-9);
    }
  }
}

// A cluster whose allreduce start-ups grow as a tree's: the same ring steps and bytes, 2 log2(P) start-ups instead of
// 2(P-1) (ClusterDescription::allreduce_latency), in both collective models; the other collectives stay rings.
TEST(DesCollectives, ATreesAllreducePaysTwoLog2PStartUps) {
  auto tree = flat_cluster();
  tree.allreduce_latency = ClusterDescription::AllreduceLatency::kTree;
  const auto ring = flat_cluster();
  const double m = 8e6;
  for (const auto model : {CollectiveModel::kSteps, CollectiveModel::kFlows}) {
    for (int64_t p : {2, 4, 8, 16}) {
      const double startups = 2 * std::log2(static_cast<double>(p));
      const double bytes_part =
          ring_allreduce_seconds({0, ring.allreduce_cost().beta, ring.gamma_seconds_per_byte}, p, m);
      EXPECT_NEAR(run_collective(CollectiveKind::kAllreduce, p, m, model, tree),
                  startups * tree.alpha_seconds + bytes_part, 1e-9)
          << p;
      EXPECT_NEAR(run_collective(CollectiveKind::kAllreduce, p, m, model, tree),
                  ring_allreduce_seconds(tree.whole_allreduce_cost(p), p, m), 1e-9)
          << p;
      EXPECT_NEAR(run_collective(CollectiveKind::kAllgather, p, m, model, tree),
                  run_collective(CollectiveKind::kAllgather, p, m, model, ring), 1e-12);
      EXPECT_NEAR(run_collective(CollectiveKind::kReduceScatter, p, m, model, tree),
                  run_collective(CollectiveKind::kReduceScatter, p, m, model, ring), 1e-12);
    }
    // Beyond two workers the tree saves the ring's extra start-ups: 2(P-1) - 2 log2 P of them.
    EXPECT_NEAR(run_collective(CollectiveKind::kAllreduce, 16, m, model, ring) -
                    run_collective(CollectiveKind::kAllreduce, 16, m, model, tree),
                (30 - 8) * ring.alpha_seconds, 1e-9);
  }
}

// Two workers per node: the ring crosses each node's NIC once each way, so the NIC (not the fast intra-node links) sets
// the pace; with one worker per node every hop is a NIC.
TEST(DesCollectives, WorkersOfANodeShareItsLink) {
  auto c = flat_cluster();
  c.gamma_seconds_per_byte = 0;
  c.alpha_seconds = 0;
  c.workers_per_node = 2;
  c.intra_node_bytes_per_second = 100 * c.worker_bytes_per_second;
  const double m = 8e6;
  const double per_node = run_collective(CollectiveKind::kAllreduce, 4, m, CollectiveModel::kFlows, c);
  EXPECT_NEAR(per_node, ring_allreduce_seconds(c.allreduce_cost(), 4, m), 1e-9);
  // A node's NIC carrying two workers' traffic at once (every worker sending to the other node) halves each.
  EventQueue queue;
  FlowNetwork network(queue);
  ClusterNetwork ports(network, c, 4, 0, {});
  std::vector<double> at;
  for (int64_t w : {0, 1}) network.transfer(ports.worker_to_worker(w, w + 2), m, 0, [&] { at.push_back(queue.now()); });
  queue.run();
  ASSERT_EQ(at.size(), 2u);
  EXPECT_NEAR(at[1], 2 * m / c.worker_bytes_per_second, 1e-9);
}

}  // namespace
}  // namespace distsgd::sim
