// The discrete-event simulator against the closed forms it must reproduce (spec/simulator.md, "Validation"): P = 1
// gives the naive and prefetched forms, WFBP the hand-worked example of sim_closed_forms_test.cpp, PS incast
// m*P/B_server, ASP saturation at S*B_server/m, SSP with s = 0 is BSP, Gaussian jitter sigma adds about sigma*sqrt(2 ln
// P) to BSP; and what only it can show: a straggler, SSP's staleness bound, determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "distsgd/sim/analytical/collective_costs.hpp"
#include "distsgd/sim/analytical/dag_model.hpp"
#include "distsgd/sim/analytical/synchronous_model.hpp"
#include "distsgd/sim/des/discrete_event_simulator.hpp"
#include "distsgd/sim/platform/busy_delivery_draws.hpp"
#include "distsgd/sim/platform/start_phases.hpp"
#include "sim_test_util.hpp"
#include "test_util.hpp"

namespace distsgd::sim {
namespace {

using distsgd::testing::uniform_link;

// The three layers of sim_closed_forms_test.cpp's DAG example: forward 0.5 s each, backward 1, 2, 3 s, I/O 2 s and
// host-to-device 1 s, update 0.25 s. Parameters chosen so that on a 1 MB/s link without latency each layer's allreduce
// between two workers (m * beta) takes 4, 1 and 2 s.
ModelProfile three_layers() {
  ModelProfile p;
  p.model = "three layers";
  p.batch_size = 16;
  p.data_seconds = 2;
  p.h2d_seconds = 1;
  p.tensors = {{"l1", 1000000, 0.5, 1}, {"l2", 250000, 0.5, 2}, {"l3", 500000, 0.5, 3}};
  p.update_seconds_per_byte = 0.25 / p.gradient_bytes();
  return p;
}

DesSettings settings(const std::string& algorithm, int64_t workers) {
  DesSettings s;
  s.algorithm = algorithm;
  s.workers = workers;
  s.iterations = 20;
  s.warmup = 5;
  return s;
}

TEST(DesClosedForms, OneWorkerGivesTheNaiveAndPrefetchedForms) {
  const auto p = three_layers();
  const auto in = p.iteration_inputs([](double) { return 0.0; });
  auto s = settings("arsgd", 1);
  s.prefetch = 0;  // the batch read on the training thread
  EXPECT_NEAR(simulate_discrete_events(p, uniform_link(1e6), s).iteration_seconds, naive_iteration_seconds(in), 1e-9);
  s.prefetch = 4;
  EXPECT_NEAR(simulate_discrete_events(p, uniform_link(1e6), s).iteration_seconds, prefetched_iteration_seconds(in),
              1e-9);
  auto io_bound = p;
  io_bound.data_seconds = 30;
  EXPECT_NEAR(simulate_discrete_events(io_bound, uniform_link(1e6), s).iteration_seconds,
              prefetched_iteration_seconds(io_bound.iteration_inputs([](double) { return 0.0; })), 1e-9);
}

// Each layer its own bucket; the DAG model's recurrence gives 4 s of communication after backward.
TEST(DesClosedForms, WaitFreeBackpropOnTheHandWorkedExample) {
  const auto p = three_layers();
  auto s = settings("arsgd", 2);
  s.overlap = "wfbp";
  s.first_bucket_bytes = s.bucket_bytes = 1;  // one tensor per bucket
  const auto r = simulate_discrete_events(p, uniform_link(1e6), s);
  const auto in = p.iteration_inputs([](double bytes) { return bytes / 1e6; });
  EXPECT_NEAR(in.layers[0].comm, 4, 1e-12);
  EXPECT_NEAR(r.iteration_seconds, wfbp_iteration_seconds(in), 1e-9);
  EXPECT_NEAR(r.iteration_seconds, 1.5 + 6 + 4 + 0.25, 1e-9);
  s.overlap = "none";
  EXPECT_NEAR(simulate_discrete_events(p, uniform_link(1e6), s).iteration_seconds, 1.5 + 6 + 7 + 0.25, 1e-9);
}

// A compute-free model of m bytes: BSP's iteration is the push (P*m/B at one server) and the pull.
ModelProfile communication_only(double bytes) {
  ModelProfile p;
  p.model = "communication only";
  p.batch_size = 1;
  p.tensors = {{"w", static_cast<int64_t>(bytes / 4), 0, 0}};
  return p;
}

// ClusterDescription::shared_cores: ranks that compute at once share the cores fairly. AR-SGD's workers compute in
// lockstep, so on a network that costs nothing 4 workers on 2 cores take twice as long per iteration, on 1 core four
// times, on 4 or more cores as long as alone, on a measured capacity of 1.5 cores 8/3 times; a --slowdown sleeps and
// leaves the cores to the others.
TEST(DesClosedForms, RanksSharingCoresComputeAtTheirShare) {
  auto p = three_layers();
  p.data_seconds = p.h2d_seconds = 0;
  auto free_network = uniform_link(1e18);
  const auto s = settings("arsgd", 4);
  const double alone = simulate_discrete_events(p, free_network, s).iteration_seconds;
  EXPECT_NEAR(alone, 7.75, 1e-6);  // forward 1.5 + backward 6 + update 0.25
  for (const double cores : {8.0, 4.0, 2.0, 1.5, 1.0}) {
    free_network.shared_cores = cores;
    const double shared = simulate_discrete_events(p, free_network, s).iteration_seconds;
    EXPECT_NEAR(shared, alone * std::max(1.0, 4.0 / cores), 1e-6) << cores << " cores";
  }
  // Two GoSGD workers that never gossip (independent) on one core: each takes twice as long as alone. With worker 1
  // sleeping as long again as it computes (--slowdown 1:2), worker 0 has the core to itself while worker 1 sleeps,
  // so it runs faster than with both computing; a sleep that took the core would leave it at twice.
  free_network.shared_cores = 1;
  auto pair = settings("gosgd", 2);
  pair.gossip_probability = 0;
  const double both_compute = simulate_discrete_events(p, free_network, pair).per_worker[0].mean_seconds;
  EXPECT_NEAR(both_compute, 2 * alone, 1e-6);
  pair.heterogeneity.slowdowns = {{1, 2.0}};
  const double one_sleeps = simulate_discrete_events(p, free_network, pair).per_worker[0].mean_seconds;
  EXPECT_LT(one_sleeps, 0.8 * both_compute);
}

// ClusterDescription::busy_delivery (issue 25, item 2): where the ranks are at least as many as the cores it was
// measured on, a message waits for its receiver while the ranks computing take every core (as when commbench measured
// the delay, every rank computing); with a core free it is delivered at once. On a network that costs nothing: with
// nobody computing (communication only, or AR-SGD's allreduce after backward) no message waits, with any number of
// cores; with a worker that computes all the time on a host of one core, every message of another worker waits: a
// constant d twice an ASP exchange (the push, then the reply; a header and a payload each, delayed alike). A sleeping
// worker (--slowdown) takes no core.
TEST(DesClosedForms, BusyReceiversWaitWhileTheCoresAreAllComputing) {
  const double d = 1e-3;
  auto c = uniform_link(1e18);
  c.busy_delivery = {{0.1, d}, {0.9, d}};
  auto bsp = settings("bsp", 4);
  bsp.overlap = "none";
  auto arsgd = settings("arsgd", 4);
  arsgd.overlap = "none";
  for (const int64_t cores : {1, 2, 8}) {
    c.busy_delivery_cores = cores;
    EXPECT_NEAR(simulate_discrete_events(communication_only(4e6), c, bsp).iteration_seconds, 0, 1e-9) << cores;
    EXPECT_NEAR(simulate_discrete_events(communication_only(4e6), c, arsgd).iteration_seconds, 0, 1e-9) << cores;
  }
  ModelProfile compute;  // 10 ms of forward and 20 of backward, 1 MB of gradient, no update
  compute.model = "compute";
  compute.batch_size = 16;
  compute.tensors = {{"layer", 250000, 0.01, 0.02}};
  const auto plain = uniform_link(1e18, 1e-4);
  auto busy = plain;
  busy.busy_delivery = {{0.1, d}, {0.9, d}};
  busy.busy_delivery_cores = 1;
  const double arsgd_plain = simulate_discrete_events(compute, plain, arsgd).iteration_seconds;
  EXPECT_NEAR(simulate_discrete_events(compute, busy, arsgd).iteration_seconds, arsgd_plain, 1e-9)
      << "the allreduce after backward: nobody computes";
  auto asp = settings("asp", 2);
  asp.servers = 1;
  asp.overlap = "none";
  asp.heterogeneity.compute_factors = {{1, 1000.0}};  // worker 1 computes through worker 0's whole run
  const auto exchange_plain = simulate_discrete_events(compute, plain, asp).per_worker[0];
  const auto exchange_busy = simulate_discrete_events(compute, busy, asp).per_worker[0];
  EXPECT_NEAR(exchange_busy.mean_seconds - exchange_plain.mean_seconds, 2 * d, 1e-9);
  busy.busy_delivery_cores = 2;  // worker 1 leaves a core free
  EXPECT_NEAR(simulate_discrete_events(compute, busy, asp).per_worker[0].mean_seconds, exchange_plain.mean_seconds,
              1e-9);
  busy.busy_delivery_cores = 1;
  asp.heterogeneity.compute_factors.clear();
  asp.heterogeneity.slowdowns = {{1, 1000.0}};  // computes 30 ms, then sleeps: the delay ends with its compute
  EXPECT_NEAR(simulate_discrete_events(compute, busy, asp).per_worker[0].p50_seconds, exchange_plain.p50_seconds, 1e-9);
  // The analytical models take the mean as more alpha per message, weighted by the share of messages a busy host
  // delivers late (busy_delivery_share); all of them where that share is 1: the same figures as the DES above.
  c.busy_delivery_cores = 2;
  const auto always = with_busy_delivery_in_alpha(c, 5);
  EXPECT_TRUE(always.busy_delivery.empty());
  const auto p = communication_only(4e6);
  EXPECT_NEAR(predict_bsp(p, 4, 1, always).iteration_seconds - predict_bsp(p, 4, 1, c).iteration_seconds, 2 * d, 1e-9);
  const auto none = allreduce_settings("none", 0, 0);
  EXPECT_NEAR(predict_allreduce_sgd(p, 4, always, none).iteration_seconds -
                  predict_allreduce_sgd(p, 4, c, none).iteration_seconds,
              6 * d, 1e-9);
  EXPECT_NEAR(predict_allreduce_sgd(p, 4, with_busy_delivery_in_alpha(c, 5, 0.25), none).iteration_seconds -
                  predict_allreduce_sgd(p, 4, c, none).iteration_seconds,
              6 * d / 4, 1e-9);
  EXPECT_EQ(with_busy_delivery_in_alpha(c, 1).alpha_seconds, c.alpha_seconds) << "one rank sends no message";
  c.busy_delivery_cores = 8;
  EXPECT_EQ(with_busy_delivery_in_alpha(c, 5).alpha_seconds, c.alpha_seconds) << "a core per rank";
  // The share: at least `cores` of `workers` computing, each a share u of its time (binomial).
  EXPECT_DOUBLE_EQ(busy_delivery_share(4, 2, 0.5), 11.0 / 16);
  EXPECT_DOUBLE_EQ(busy_delivery_share(4, 4, 0.5), 1.0 / 16);
  EXPECT_NEAR(busy_delivery_share(3, 1, 0.2), 1 - 0.8 * 0.8 * 0.8, 1e-12);
  EXPECT_DOUBLE_EQ(busy_delivery_share(4, 2, 0), 0);
  EXPECT_DOUBLE_EQ(busy_delivery_share(4, 2, 1), 1);
  EXPECT_DOUBLE_EQ(busy_delivery_share(2, 3, 1), 0) << "fewer workers than cores";
  c.busy_delivery_cores = 1;
  // The draws follow the measured distribution (linear between quantiles, flat beyond) and the seed.
  c.busy_delivery = {{0.0, 0}, {1.0, 2 * d}};
  EXPECT_DOUBLE_EQ(c.busy_delivery_seconds(0.25), 0.5 * d);
  EXPECT_DOUBLE_EQ(c.busy_delivery_mean_seconds(), d);
  c.busy_delivery = {{0.5, d}, {0.9, 3 * d}};
  EXPECT_DOUBLE_EQ(c.busy_delivery_seconds(0.2), d);
  EXPECT_DOUBLE_EQ(c.busy_delivery_seconds(0.7), 2 * d);
  EXPECT_DOUBLE_EQ(c.busy_delivery_seconds(0.95), 3 * d);
  EXPECT_DOUBLE_EQ(c.busy_delivery_mean_seconds(), 0.5 * d + 0.4 * 2 * d + 0.1 * 3 * d);
  // The n-th message gets the n-th draw whether or not the cores were all computing as it arrived, so that where the
  // rule holds the delays are the distribution's, whatever came before.
  BusyDeliveryDraws all_busy(c, 4, 7), some_free(c, 4, 7);
  for (int i = 0; i < 20; ++i) {
    const double delay = all_busy.next(1);
    EXPECT_GE(delay, d) << i;
    if (i % 2 == 0) {
      EXPECT_EQ(some_free.next(0), 0) << i;
    } else {
      EXPECT_EQ(some_free.next(1), delay) << i;
    }
  }
  EXPECT_EQ(all_busy.mean(1), c.busy_delivery_mean_seconds());
  EXPECT_EQ(all_busy.mean(0), 0);
  // A server's exchange is a header and a payload, each delayed: it arrives after the later of two draws. Uniform on
  // [0, 2d], that is 4d/3 on average (one draw: d, the sum of two: 2d), so one worker's push and pull take 8d/3 while
  // another worker computes all the time on a host of one core.
  busy.busy_delivery = {{0.0, 0}, {1.0, 2 * d}};
  asp.heterogeneity.slowdowns.clear();
  asp.heterogeneity.compute_factors = {{1, 1000.0}};
  asp.iterations = 2000;
  asp.warmup = 0;
  auto asp_plain = asp;
  EXPECT_NEAR(simulate_discrete_events(compute, busy, asp).per_worker[0].mean_seconds -
                  simulate_discrete_events(compute, plain, asp_plain).per_worker[0].mean_seconds,
              8 * d / 3, 0.1 * d);
}

TEST(DesClosedForms, ParameterServerIncastAtOneServer) {
  const double m = 4e6, rate = 125e6;
  for (int64_t workers : {1, 4, 16}) {
    const auto r = simulate_discrete_events(communication_only(m), uniform_link(rate), settings("bsp", workers));
    EXPECT_NEAR(r.iteration_seconds, 2 * m * static_cast<double>(workers) / rate, 1e-9) << workers;
    // The server's link is busy all the time: in while the workers push, out while they pull.
    for (const auto& u : r.utilisation) {
      if (u.name == std::string("server_in") || u.name == std::string("server_out")) {
        EXPECT_NEAR(u.mean, 0.5, 1e-6) << u.name;
      }
    }
  }
  // Two servers halve it; a worker's own link bounds it below.
  auto s = settings("bsp", 4);
  s.servers = 2;
  EXPECT_NEAR(simulate_discrete_events(communication_only(m), uniform_link(rate), s).iteration_seconds,
              2 * 2 * m / rate, 1e-9);
}

// ASP: many workers, a short compute; the servers take at most S*B_server/m gradients a second. Identical workers start
// in step and fair sharing keeps them in step (every push, then every reply: each link idle half the time), so jitter
// lets their pushes interleave, as in any real cluster; fair sharing still bunches them a little (pushes that share the
// link end together), hence "near" saturation.
TEST(DesClosedForms, AspSaturatesAtTheServersLinks) {
  ModelProfile p = communication_only(4e6);
  p.tensors[0].forward_seconds = p.tensors[0].backward_seconds = 0.01;
  const double rate = 125e6;
  for (int64_t servers : {1, 2}) {
    auto s = settings("asp", 64);
    s.servers = servers;
    s.iterations = 60;
    s.heterogeneity.jitter_cv = 0.5;
    const auto r = simulate_discrete_events(p, uniform_link(rate), s);
    const double saturation = static_cast<double>(servers) * rate / 4e6;  // gradients (of batch 1) per second
    EXPECT_GT(r.samples_per_second / saturation, 0.9) << servers;
    EXPECT_LE(r.samples_per_second / saturation, 1 + 1e-9) << servers;
  }
}

// Independent workers start at spread phases (sim/platform/start_phases.hpp) and a fairly shared link keeps them:
// two ASP workers of 2 s of compute whose exchange with the server (1 MB each way at 2 MB/s) takes 1 s start 1.5 s
// apart and never meet on the server's link, so an iteration is compute and exchange, 3 s. Started together, as they
// were, they pushed and pulled together at half the rate each: 4 s. BSP's workers, which meet at every step anyway,
// start together.
TEST(DesClosedForms, IndependentWorkersStartAtSpreadPhasesAndKeepThem) {
  ModelProfile p = communication_only(1e6);
  p.tensors[0].forward_seconds = p.tensors[0].backward_seconds = 1;
  const auto link = uniform_link(2e6);
  EXPECT_NEAR(lone_iteration_seconds(p, link), 3, 1e-12);
  EXPECT_EQ(first_iteration_start_seconds("asp", p, link, 0, 2), 0);
  EXPECT_NEAR(first_iteration_start_seconds("asp", p, link, 1, 2), 1.5, 1e-12);
  EXPECT_NEAR(first_iteration_start_seconds("gossip", p, link, 3, 4), 2.25, 1e-12);
  EXPECT_EQ(first_iteration_start_seconds("asp", p, link, 0, 1), 0);
  EXPECT_EQ(first_iteration_start_seconds("bsp", p, link, 1, 2), 0);  // synchronous: together
  auto s = settings("asp", 2);
  s.overlap = "none";
  EXPECT_NEAR(simulate_discrete_events(p, link, s).iteration_seconds, 3, 1e-9);
  // BSP: the two pushes share the server's link (1 s), then the replies (1 s).
  EXPECT_NEAR(simulate_discrete_events(p, link, settings("bsp", 2)).iteration_seconds, 2 + 1 + 1, 1e-9);
}

// ClusterDescription::egress_queue kFifo: a server's NIC sends its replies one after another, so BSP's first workers
// compute while the last wait for theirs, and their next pushes reach the server one after another too. 4 workers of
// 2 s of compute, 1 MB each way at 2 MB/s (0.5 s a message): shared fairly, the pushes all end together after 2 s,
// the replies after 2 s more, 6 s an iteration; one at a time, the round ends 0.5 s after the last worker's push
// starts, which is 2 s (four replies) + 2 s (compute) after the last round ended: 4.5 s.
TEST(DesClosedForms, FifoNicsSendOneMessageAfterAnother) {
  ModelProfile p = communication_only(1e6);
  p.tensors[0].forward_seconds = p.tensors[0].backward_seconds = 1;
  // A message's start-up (alpha) runs while it waits in the queue: only the bytes queue, so alpha counts once a leg.
  for (const double alpha : {0.0, 0.1}) {
    auto link = uniform_link(2e6, alpha);
    const auto s = settings("bsp", 4);
    EXPECT_NEAR(simulate_discrete_events(p, link, s).iteration_seconds, 2 + 2 + 2 + 2 * alpha, 1e-9) << alpha;
    link.egress_queue = ClusterDescription::EgressQueue::kFifo;
    EXPECT_NEAR(simulate_discrete_events(p, link, s).iteration_seconds, 4 * 0.5 + 2 + 0.5 + 2 * alpha, 1e-9) << alpha;
    // One worker: nothing to queue behind.
    EXPECT_NEAR(simulate_discrete_events(p, link, settings("bsp", 1)).iteration_seconds, 0.5 + 2 + 0.5 + 2 * alpha,
                1e-9)
        << alpha;
    // The analytical model's form, with and without pushing during backward.
    for (const bool wait_free : {false, true}) {
      PsLayout layout;
      layout.wait_free = wait_free;
      EXPECT_NEAR(predict_bsp(p, 4, 1, link, layout).iteration_seconds, 4 * 0.5 + 2 + 0.5 + 2 * alpha, 1e-9)
          << wait_free << " " << alpha;
      auto fair = link;
      fair.egress_queue = ClusterDescription::EgressQueue::kFair;
      EXPECT_NEAR(predict_bsp(p, 4, 1, fair, layout).iteration_seconds, 2 + 2 + 2 + 2 * alpha, 1e-9)
          << wait_free << " " << alpha;
    }
  }
}

// ClusterDescription::collective_handover: on a host whose cores the ranks share, every step of a collective among P
// ranks pays the hand-over measured at P (linear between the measured counts). AR-SGD's allreduce after backward of 1
// MB at 1 MB/s without alpha: 2(P-1)/P s; with 0, 10 and 50 ms of hand-over at 2, 4 and 8 ranks it takes 2(P-1)
// steps of that longer, in both fidelities (P = 6: 30 ms, interpolated). With an allreduce measured at 4 processes
// (which holds that count's hand-over) the analytical model adds only the difference at other counts.
TEST(DesClosedForms, ACollectiveStepPaysTheHostsHandOverAtItsRankCount) {
  const ModelProfile p = communication_only(1e6);
  auto link = uniform_link(1e6);
  link.collective_handover = {{2, 0.0}, {4, 0.01}, {8, 0.05}};
  AllreduceSettings after_backward;
  after_backward.wait_free = false;
  for (const auto& [workers, handover] :
       std::vector<std::pair<int64_t, double>>{{2, 0}, {4, 0.01}, {6, 0.03}, {8, 0.05}, {16, 0.05}}) {
    const double P = static_cast<double>(workers);
    const double expected = 2 * (P - 1) / P + 2 * (P - 1) * handover;
    auto s = settings("arsgd", workers);
    s.overlap = "none";
    EXPECT_NEAR(simulate_discrete_events(p, link, s).iteration_seconds, expected, 1e-9) << workers;
    EXPECT_NEAR(predict_allreduce_sgd(p, workers, link, after_backward).iteration_seconds, expected, 1e-9) << workers;
    auto measured = link;
    measured.allreduce_fit = {4, 6 * 0.02, 1e-6 * 6 / 4};  // 20 ms a step at 4 processes, the link's rate
    EXPECT_NEAR(predict_allreduce_sgd(p, workers, measured, after_backward).iteration_seconds,
                2 * (P - 1) / P + 2 * (P - 1) * (0.02 + handover - 0.01), 1e-9)
        << workers;
  }
  // Multistep's alltoall steps pay it too, as the DES's ring collectives charge every kind of step.
  EXPECT_DOUBLE_EQ(link.alltoall_cost(4).alpha, 0.01);
  EXPECT_DOUBLE_EQ(link.alltoall_cost(6).alpha, 0.03);
  // Across nodes too, as the allreduce's steps: the network's alpha of 20 ms (above the node's own link's 0) and the
  // hand-over's 10 ms.
  auto two_per_node = link;
  two_per_node.workers_per_node = 2;
  two_per_node.alpha_seconds = 0.02;
  two_per_node.intra_node_bytes_per_second = 1e6;
  two_per_node.intra_node_alpha_seconds = 0;
  EXPECT_DOUBLE_EQ(two_per_node.alltoall_cost(4).alpha, 0.03);
  EXPECT_DOUBLE_EQ(two_per_node.alltoall_cost(4).alpha, two_per_node.allreduce_cost(4).alpha);
  // From fits at several counts: the alpha per ring step beyond the fewest processes', never below 0.
  const auto points =
      collective_handover_from_fits({{8, 14 * 0.003, 1e-9}, {2, 2 * 0.001, 1e-9}, {4, 6 * 0.0008, 1e-9}, {1, 0, 1e-9}});
  ASSERT_EQ(points.size(), 3u);
  EXPECT_EQ(points[0].ranks, 2);
  EXPECT_DOUBLE_EQ(points[0].seconds, 0);
  EXPECT_EQ(points[1].ranks, 4);
  EXPECT_DOUBLE_EQ(points[1].seconds, 0);  // 0.8 ms a step, below 2 processes' 1 ms: the fits' noise
  EXPECT_EQ(points[2].ranks, 8);
  EXPECT_NEAR(points[2].seconds, 0.002, 1e-12);
  EXPECT_TRUE(collective_handover_from_fits({{2, 0.001, 1e-9}}).empty());
}

// Without compute to hide them, SSP's pushes (sent without waiting) and BSP's take the same time, and a pull held
// until every worker's push is in returns when BSP's replies would, one alpha later: the pull's request follows the
// push on its worker's channel to the server (the handler posts its next receive once the push is applied), where
// BSP's reply follows the push directly.
TEST(DesClosedForms, SspWithStalenessZeroIsBspAndOneRequest) {
  auto no_update = three_layers();
  no_update.update_seconds_per_byte = 0;  // SSP's local update and per-push server updates; BSP's one aggregate
  for (const std::string overlap : {"none", "wfbp"}) {
    auto ssp = settings("ssp", 4), bsp = settings("bsp", 4);
    ssp.staleness = 0;
    ssp.overlap = bsp.overlap = "none";
    for (const double alpha : {0.0, 0.01}) {
      // Relative: SSP's workers start at spread phases (sim/platform/start_phases.hpp), BSP's together, and the
      // times differ by rounding once the first pull has lined SSP's up.
      const double bsp_seconds = simulate_discrete_events(no_update, uniform_link(1e6, alpha), bsp).iteration_seconds;
      EXPECT_NEAR(simulate_discrete_events(no_update, uniform_link(1e6, alpha), ssp).iteration_seconds,
                  bsp_seconds + alpha, 1e-9 * bsp_seconds)
          << overlap << " " << alpha;
    }
  }
}

// BSP waits for the slowest of P workers each iteration: Gaussian jitter of standard deviation sigma on the compute
// adds the expected maximum of P draws, about sigma*sqrt(2 ln P) (below it for finite P: 2.8 sigma at P = 256).
TEST(DesClosedForms, GaussianJitterAddsAboutSigmaSqrtTwoLnP) {
  ModelProfile p = communication_only(4);  // communication negligible
  p.tensors[0].forward_seconds = 0.1;
  p.tensors[0].backward_seconds = 0.2;
  const int64_t workers = 256;
  auto s = settings("bsp", workers);
  s.iterations = 200;
  const double steady = simulate_discrete_events(p, uniform_link(1e9), s).iteration_seconds;
  s.heterogeneity.jitter_kind = JitterKind::kNormal;
  s.heterogeneity.jitter_cv = 0.05;
  const double sigma = 0.05 * 0.3;
  const double added = simulate_discrete_events(p, uniform_link(1e9), s).iteration_seconds - steady;
  const double closed_form = sigma * std::sqrt(2 * std::log(static_cast<double>(workers)));
  EXPECT_GT(added, 0.75 * closed_form);
  EXPECT_LT(added, 1.05 * closed_form);
}

// One worker four times slower: BSP runs at its pace; ASP and ALADDIN lose about its share only.
TEST(DesClosedForms, AStragglerSlowsBspToItsPaceButAsynchronousAlgorithmsLittle) {
  ModelProfile p = communication_only(4e5);
  p.tensors[0].forward_seconds = 0.01;
  p.tensors[0].backward_seconds = 0.02;
  const auto c = uniform_link(1e9);
  for (const std::string algorithm : {"bsp", "asp", "aladdin"}) {
    auto s = settings(algorithm, 8);
    s.servers = 8;
    const double even = simulate_discrete_events(p, c, s).samples_per_second;
    s.heterogeneity.slowdowns = {{3, 4.0}};
    const double slowed = simulate_discrete_events(p, c, s).samples_per_second;
    if (algorithm == "bsp") {
      EXPECT_LT(slowed / even, 0.35) << algorithm;
    } else {
      EXPECT_GT(slowed / even, 0.85) << algorithm;  // 7 of 8 workers at full speed, the eighth at a quarter
    }
  }
}

TEST(DesClosedForms, SspClockGapNeverExceedsTheStaleness) {
  ModelProfile p = communication_only(4e5);
  p.tensors[0].forward_seconds = 0.01;
  for (int64_t staleness : {0, 2, 5}) {
    auto s = settings("ssp", 6);
    s.staleness = staleness;
    s.iterations = 60;
    s.heterogeneity.slowdowns = {{1, 3.0}};
    s.heterogeneity.jitter_cv = 0.3;
    const auto r = simulate_discrete_events(p, uniform_link(1e9), s);
    ASSERT_FALSE(r.clock_gap.empty());
    EXPECT_LE(r.clock_gap.rbegin()->first, staleness);
    if (staleness > 0) {
      EXPECT_EQ(r.clock_gap.rbegin()->first,
                staleness);  // the straggler holds the others back
    }
    EXPECT_FALSE(r.staleness.empty());
  }
}

std::string traced_run(uint64_t seed, const testing::TempDir& dir, const std::string& name) {
  auto s = settings("asp", 4);
  s.seed = seed;
  s.heterogeneity.jitter_cv = 0.2;
  s.heterogeneity.straggler_probability = 0.1;
  s.heterogeneity.straggler_factor = 3;
  s.trace_path = dir / name;
  simulate_discrete_events(three_layers(), uniform_link(1e6), s);
  return testing::read_file(s.trace_path);
}

TEST(DesClosedForms, TheSameSeedGivesTheSameRunAndAnotherSeedAnother) {
  testing::TempDir dir;
  const auto a = traced_run(7, dir, "a.json"), b = traced_run(7, dir, "b.json"), c = traced_run(8, dir, "c.json");
  EXPECT_GT(a.size(), 1000u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

}  // namespace
}  // namespace distsgd::sim
