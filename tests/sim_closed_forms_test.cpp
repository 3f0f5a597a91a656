// The simulator's closed forms (spec/simulator.md, "Validation"): the DAG model's naive, prefetched and wait-free
// backprop iteration times, MG-WFBP's merge and multistep's gathered forward on hand-worked examples, and the
// collective cost formulas.
#include <gtest/gtest.h>

#include <random>

#include "distsgd/sim/collective_costs.hpp"
#include "distsgd/sim/dag_model.hpp"
#include "distsgd/sim/merged_gradients.hpp"

namespace distsgd::sim {
namespace {

IterationInputs three_layers(std::vector<double> backward, std::vector<double> comm) {
  IterationInputs in;
  for (std::size_t l = 0; l < backward.size(); ++l) in.layers.push_back({0.5, backward[l], comm[l]});
  in.io = 2;
  in.h2d = 1;
  in.update = 0.25;
  return in;
}

TEST(DagModel, NaiveAndPrefetchedForms) {
  const auto in = three_layers({1, 2, 3}, {4, 1, 2});
  // forward 1.5, backward 6, comm 7
  EXPECT_DOUBLE_EQ(naive_iteration_seconds(in), 2 + 1 + 1.5 + 6 + 7 + 0.25);
  EXPECT_DOUBLE_EQ(prefetched_iteration_seconds(in), 1.5 + 6 + 7 + 0.25);
  auto io_bound = in;
  io_bound.io = 30;
  EXPECT_DOUBLE_EQ(prefetched_iteration_seconds(io_bound), 31);
}

// Backward runs l3 (0-3), l2 (3-5), l1 (5-6). Communication: l3 3-5, l2 5-6, l1 6-10: 4 s after the backward pass.
TEST(DagModel, WaitFreeBackpropOnAHandWorkedExample) {
  const auto in = three_layers({1, 2, 3}, {4, 1, 2});
  EXPECT_DOUBLE_EQ(wfbp_exposed_communication_seconds(in.layers), 4);
  EXPECT_DOUBLE_EQ(wfbp_iteration_seconds(in), 1.5 + 6 + 4 + 0.25);
}

// Backward l3 0-1, l2 1-2, l1 2-3; communication queues: l3 1-4, l2 4-7, l1 7-8: 5 s exposed.
TEST(DagModel, WaitFreeBackpropWhenTheChannelQueues) {
  const auto in = three_layers({1, 1, 1}, {1, 3, 3});
  EXPECT_DOUBLE_EQ(wfbp_exposed_communication_seconds(in.layers), 5);
}

// Whatever the times, wait-free backprop hides at most all but the first layer's communication, and never adds any.
TEST(DagModel, WaitFreeBackpropIsBetweenTheFirstLayersAndAllCommunication) {
  std::mt19937 random(7);
  std::uniform_real_distribution<double> time(0, 1);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<LayerTimes> layers(1 + trial % 7);
    double comm = 0;
    for (auto& layer : layers) {
      layer = {time(random), time(random), time(random)};
      comm += layer.comm;
    }
    const double exposed = wfbp_exposed_communication_seconds(layers);
    EXPECT_GE(exposed, layers[0].comm - 1e-12);
    EXPECT_LE(exposed, comm + 1e-12);
  }
}

// Gathers queued input first: a 0-2, b 2-3, c 3-6. Forward a 2-3, b 3-5, c waits for its gather: 6-7. The
// forward pass ends at 7 where its compute is 4: 3 s exposed.
TEST(DagModel, GatheredForwardWaitsForEachLayersOwnGather) {
  const std::vector<LayerTimes> layers = {{1, 0, 2}, {2, 0, 1}, {1, 0, 3}};
  EXPECT_DOUBLE_EQ(gathered_forward_exposed_seconds(layers), 3);
  // Gathers far faster than forward: only the first layer's gather shows.
  EXPECT_DOUBLE_EQ(gathered_forward_exposed_seconds({{1, 0, 0.5}, {2, 0, 0.1}, {1, 0, 0.1}}), 0.5);
}

// Three layers of 1 byte, backward 1 s each, comm(b) = 4 + b: start-up dominates. Per layer: backward l3 0-1,
// l2 1-2, l1 2-3; communication l3 1-6, l2 6-11, l1 11-16: 13 s exposed. MG-WFBP, last to first: l2 is ready at 2,
// before l3's communication (1-6) ends; waiting 1 s for it saves 4 + 1 + 4 + 1 - (4 + 2) = 4 s: merge. Then l1 is
// ready at 3, before l2+l3's (2-8) ends; waiting 1 s saves 5 + 6 - 7 = 4 s: merge. One message of 3 bytes at 3-10.
TEST(MergedGradients, MgwfbpMergesSmallLayersWhenStartUpDominates) {
  const std::vector<LayerTimes> layers = {{0, 1, 0}, {0, 1, 0}, {0, 1, 0}};
  const std::vector<double> bytes = {1, 1, 1};
  const auto comm = [](double b) { return 4 + b; };
  std::vector<LayerTimes> per_layer = layers;
  for (auto& layer : per_layer) layer.comm = 5;
  EXPECT_DOUBLE_EQ(wfbp_exposed_communication_seconds(per_layer), 13);
  const auto merged = merge_gradients_mgwfbp(layers, bytes, comm);
  ASSERT_EQ(merged.layers.size(), 1u);
  EXPECT_EQ(merged.first_layer, std::vector<std::size_t>{0});
  EXPECT_DOUBLE_EQ(merged.bytes[0], 3);
  EXPECT_DOUBLE_EQ(merged.layers[0].comm, 7);
  EXPECT_DOUBLE_EQ(merged.layers[0].backward, 3);
  EXPECT_DOUBLE_EQ(wfbp_exposed_communication_seconds(merged.layers), 7);
}

TEST(MergedGradients, MgwfbpLeavesLayersAloneWhenMergingDoesNotPay) {
  // Long backward, cheap messages: each layer's communication ends before the next gradient is ready.
  const std::vector<LayerTimes> slow_backward = {{0, 10, 0}, {0, 10, 0}, {0, 10, 0}};
  const auto cheap = [](double b) { return 0.1 + b; };
  const auto alone = merge_gradients_mgwfbp(slow_backward, {1, 1, 1}, cheap);
  EXPECT_EQ(alone.first_layer, (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_NEAR(wfbp_exposed_communication_seconds(alone.layers), 1.1, 1e-12);
  // l3's communication (comm(1) = 2.5, at 1-3.5) is still running when l2 is ready at 3, but waiting 2 s for l2
  // would save only 2.5 + 2.5 - comm(2) = 0.5 s: no merge. Nor of l2 (3.5-6) into l1, ready at 4.5: 1 s for 0.5.
  const auto bandwidth_bound = [](double b) { return 0.5 + 2 * b; };
  const auto kept = merge_gradients_mgwfbp({{0, 1.5, 0}, {0, 2, 0}, {0, 1, 0}}, {1, 1, 1}, bandwidth_bound);
  EXPECT_EQ(kept.first_layer, (std::vector<std::size_t>{0, 1, 2}));
}

// The merge never leaves more communication exposed than wait-free backprop layer by layer.
TEST(MergedGradients, MgwfbpIsNeverWorseThanOneMessagePerLayer) {
  std::mt19937 random(3);
  std::uniform_real_distribution<double> unit(0, 1);
  for (int trial = 0; trial < 300; ++trial) {
    const double alpha = 2 * unit(random), beta = unit(random);
    const auto comm = [&](double b) { return alpha + beta * b; };
    std::vector<LayerTimes> layers(1 + trial % 12);
    std::vector<double> bytes;
    for (auto& layer : layers) {
      bytes.push_back(4 * unit(random));
      layer = {unit(random), 2 * unit(random), comm(bytes.back())};
    }
    const auto merged = merge_gradients_mgwfbp(layers, bytes, comm);
    EXPECT_LE(wfbp_exposed_communication_seconds(merged.layers), wfbp_exposed_communication_seconds(layers) + 1e-12);
  }
}

TEST(CollectiveCosts, RingAllreduceFormula) {
  const LinkCost c{1e-4, 1e-9, 2e-10};
  const double m = 16 << 20;
  EXPECT_DOUBLE_EQ(ring_allreduce_seconds(c, 2, m), 2 * 1e-4 + m * 1e-9 + 0.5 * m * 2e-10);
  EXPECT_DOUBLE_EQ(ring_allreduce_seconds(c, 4, m), 6 * 1e-4 + 1.5 * m * 1e-9 + 0.75 * m * 2e-10);
  EXPECT_DOUBLE_EQ(ring_allreduce_seconds(c, 1, m), 0);
  EXPECT_DOUBLE_EQ(halving_doubling_allreduce_seconds(c, 8, m), 6 * 1e-4 + 1.75 * m * 1e-9 + 0.875 * m * 2e-10);
  // A ring allreduce is a reduce-scatter and an allgather.
  EXPECT_DOUBLE_EQ(ring_reduce_scatter_seconds(c, 4, m) + ring_allgather_seconds(c, 4, m),
                   ring_allreduce_seconds(c, 4, m));
  EXPECT_DOUBLE_EQ(point_to_point_seconds(c, m), 1e-4 + m * 1e-9);
}

// One server takes all P pushes through its NIC: P*m/B. S servers split that; the worker's own link bounds it below.
TEST(CollectiveCosts, ParameterServerIncast) {
  const double m = 4 << 20, rate = 125e6;
  EXPECT_DOUBLE_EQ(ps_push_seconds(0, 4, 1, m, rate, rate), 4 * m / rate);
  EXPECT_DOUBLE_EQ(ps_push_seconds(0, 4, 2, m, rate, rate), 2 * m / rate);
  EXPECT_DOUBLE_EQ(ps_push_seconds(0, 4, 4, m, rate, rate), m / rate);
  EXPECT_DOUBLE_EQ(ps_push_seconds(0, 4, 8, m, rate, rate), m / rate);
  EXPECT_DOUBLE_EQ(ps_push_seconds(1e-3, 4, 1, m, rate, 4 * rate), 1e-3 + m / rate);
}

}  // namespace
}  // namespace distsgd::sim
