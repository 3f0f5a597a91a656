// The discrete-event simulator agrees with the analytical models (spec/simulator.md, "Two fidelities") where both
// apply: homogeneous workers, no contention. Each algorithm is run where the analytical model's assumptions hold.
#include <gtest/gtest.h>

#include "distsgd/core/error.hpp"
#include "distsgd/sim/analytical/asynchronous_model.hpp"
#include "distsgd/sim/analytical/decentralized_model.hpp"
#include "distsgd/sim/analytical/synchronous_model.hpp"
#include "distsgd/sim/des/discrete_event_simulator.hpp"
#include "sim_test_util.hpp"

namespace distsgd::sim {
namespace {

using distsgd::testing::uniform_link;

constexpr double kAlpha = 3e-5;  // per message

// sim_models_test.cpp's three tensors: 7 MB of gradients, 18 ms of forward and backward, 0.7 ms of update.
ModelProfile toy() {
  ModelProfile p;
  p.model = "toy";
  p.batch_size = 32;
  p.data_seconds = 0.001;
  p.update_seconds_per_byte = 1e-10;
  p.tensors = {{"a", 1000000, 0.001, 0.002}, {"b", 500000, 0.002, 0.004}, {"c", 250000, 0.003, 0.006}};
  return p;
}

DesResult run(const std::string& algorithm, int64_t workers, const ClusterDescription& c,
              const std::function<void(DesSettings&)>& configure = nullptr) {
  DesSettings s;
  s.algorithm = algorithm;
  s.workers = workers;
  s.iterations = 30;
  s.warmup = 5;
  s.servers = workers;  // as many shards as workers: no server link is busier than a worker's
  if (configure) configure(s);
  return simulate_discrete_events(toy(), c, s);
}

double des(const std::string& algorithm, int64_t workers, const ClusterDescription& c,
           const std::function<void(DesSettings&)>& configure = nullptr) {
  return run(algorithm, workers, c, configure).iteration_seconds;
}

constexpr double kFewPercent = 0.03;
// The decentralized analytical models leave out merging what arrives (one pass over the model per message, which the
// simulator charges at the update cost: 0.7 ms of 18.7 here).
constexpr double kWithMerges = 0.05;

TEST(DesAgreesWithAnalytical, AllreduceSgdEveryOverlap) {
  const auto p = toy();
  const auto c = uniform_link(1e9, kAlpha);
  for (int64_t workers : {2, 4, 8}) {
    // mgwfbp and merge-optimal: the simulator's buckets are the groups the analytical merge picks.
    for (const std::string overlap : {"none", "wfbp", "multistep", "mgwfbp", "merge-optimal"}) {
      const auto settings = allreduce_settings(overlap, 25.0 * 1024 * 1024, 1024.0 * 1024);
      const double analytical = predict_allreduce_sgd(p, workers, c, settings).iteration_seconds;
      const double simulated = des("arsgd", workers, c, [&](DesSettings& s) { s.overlap = overlap; });
      EXPECT_NEAR(simulated / analytical, 1, kFewPercent) << overlap << " " << workers;
    }
  }
}

// Buckets of 0 MB (simulate --bucket-mb 0 --first-bucket-mb 0): every tensor its own allreduce as its gradient is
// ready, in both fidelities alike (the HKBU figures' WFBP-A2A); a negative size is refused.
TEST(DesAgreesWithAnalytical, ZeroMegabyteBucketsAreABucketPerTensor) {
  const auto p = toy();
  const auto c = uniform_link(1e9, 2e-3);  // start-ups large enough to count
  for (int64_t workers : {2, 4}) {
    const double analytical = predict_allreduce_sgd(p, workers, c, allreduce_settings("wfbp", 0, 0)).iteration_seconds;
    const auto per_tensor = run("arsgd", workers, c, [](DesSettings& s) {
      s.overlap = "wfbp";
      s.bucket_bytes = s.first_bucket_bytes = 0;
    });
    EXPECT_NEAR(per_tensor.iteration_seconds / analytical, 1, kFewPercent) << workers;
    // The same layout as buckets of one byte, which no two tensors share.
    const auto one_byte = run("arsgd", workers, c, [](DesSettings& s) {
      s.overlap = "wfbp";
      s.bucket_bytes = s.first_bucket_bytes = 1;
    });
    EXPECT_DOUBLE_EQ(per_tensor.iteration_seconds, one_byte.iteration_seconds) << workers;
    EXPECT_EQ(per_tensor.events, one_byte.events) << workers;
  }
  DesSettings negative;
  negative.algorithm = "arsgd";
  negative.workers = 2;
  negative.bucket_bytes = -1;
  try {
    check(negative);
    ADD_FAILURE() << "a negative bucket was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--bucket-mb and --first-bucket-mb must not be negative"), std::string::npos)
        << e.what();
  }
}

// Computing and communicating at once (ClusterDescription::interference_alpha_seconds): both fidelities charge it to
// the collectives that run beside compute (wait-free backprop's, multistep's) and still agree; the one allreduce after
// backward, and a ring within one node, pay nothing.
TEST(DesAgreesWithAnalytical, InterferenceSlowsOnlyTheCollectivesBesideCompute) {
  const auto p = toy();
  const auto c = uniform_link(1e9, kAlpha);
  auto interfered = c;
  interfered.interference_alpha_seconds = 2e-4;
  const double per_tensor = 1024.0 * 1024;  // each of toy's tensors a bucket of its own
  for (int64_t workers : {2, 4, 8}) {
    // mgwfbp and merge-optimal: the simulator's buckets are the groups the analytical merge picks.
    for (const std::string overlap : {"none", "wfbp", "multistep", "mgwfbp", "merge-optimal"}) {
      const auto settings = allreduce_settings(overlap, per_tensor, per_tensor);
      const auto configure = [&](DesSettings& s) {
        s.overlap = overlap;
        s.bucket_bytes = s.first_bucket_bytes = per_tensor;
      };
      const double analytical = predict_allreduce_sgd(p, workers, interfered, settings).iteration_seconds;
      const double simulated = des("arsgd", workers, interfered, configure);
      // Multistep's gathers: the analytical model takes the forward to compute from the first gather's end for t_f;
      // the simulator follows each bucket's gate (4.4% apart at 8 workers).
      EXPECT_NEAR(simulated / analytical, 1, overlap == "multistep" ? 0.05 : kFewPercent) << overlap << " " << workers;
      const double plain_analytical = predict_allreduce_sgd(p, workers, c, settings).iteration_seconds;
      const double plain_simulated = des("arsgd", workers, c, configure);
      if (overlap == "none") {
        EXPECT_DOUBLE_EQ(analytical, plain_analytical) << workers;
        EXPECT_DOUBLE_EQ(simulated, plain_simulated) << workers;
      } else {
        EXPECT_GT(analytical, plain_analytical + 1e-4) << overlap << " " << workers;
        // (The simulator's multistep at 2 workers ends 0.4% sooner: slower scatters reorder the gathers and gates.)
        if (overlap == "wfbp") {
          EXPECT_GT(simulated, plain_simulated + 1e-4) << workers;
        }
      }
    }
  }
  // Eight workers on one node: no step crosses a node.
  auto one_node = interfered;
  one_node.workers_per_node = 8;
  auto plain_node = c;
  plain_node.workers_per_node = 8;
  const auto wfbp = allreduce_settings("wfbp", per_tensor, per_tensor);
  EXPECT_DOUBLE_EQ(predict_allreduce_sgd(p, 8, one_node, wfbp).iteration_seconds,
                   predict_allreduce_sgd(p, 8, plain_node, wfbp).iteration_seconds);
  const auto configure = [&](DesSettings& s) {
    s.overlap = "wfbp";
    s.bucket_bytes = s.first_bucket_bytes = per_tensor;
  };
  EXPECT_DOUBLE_EQ(des("arsgd", 8, one_node, configure), des("arsgd", 8, plain_node, configure));
}

// The analytical models push whole shards after backward (--overlap none).
TEST(DesAgreesWithAnalytical, ParameterServerAlgorithms) {
  const auto p = toy();
  const auto c = uniform_link(1e9, kAlpha);
  const auto after_backward = [](DesSettings& s) { s.overlap = "none"; };
  for (int64_t workers : {1, 4}) {
    EXPECT_NEAR(des("bsp", workers, c, after_backward) / predict_bsp(p, workers, workers, c).iteration_seconds, 1,
                1e-9);
    EXPECT_NEAR(des("asp", workers, c, after_backward) / predict_asp(p, workers, workers, c).iteration_seconds, 1,
                kFewPercent);
    for (int64_t tau : {1, 2, 8}) {
      EXPECT_NEAR(des("easgd", workers, c, [&](DesSettings& s) { s.tau = tau; }) /
                      predict_easgd(p, workers, workers, tau, c).iteration_seconds,
                  1, kFewPercent)
          << tau;
    }
    EXPECT_NEAR(des("aladdin", workers, c) / predict_aladdin(p, workers, workers, 4, c).iteration_seconds, 1,
                kFewPercent);
  }
  // ALADDIN where the worker's uplink, not its compute, sets the pace: every pi gradients it rests while the
  // servers' handlers send it their models (21% slower than without the rest, here). The analytical model rests it
  // for the whole model's transfer; in the DES a smaller shard's handler is free again sooner, and the worker's
  // pieces for that shard go on: 3% faster.
  const auto slow = uniform_link(2e8, kAlpha);
  EXPECT_NEAR(des("aladdin", 4, slow) / predict_aladdin(p, 4, 4, 4, slow).iteration_seconds, 1, 0.05);
  // Wait-free backprop (the default) pushes the last layers' pieces during backward: BSP gets faster where the
  // server holding them is the one every push loads (one server; with memory sharding the last layers' shard is
  // one of several).
  const auto one_server = [](DesSettings& s) { s.servers = 1; };
  EXPECT_LT(des("bsp", 2, c, one_server), 0.95 * des("bsp", 2, c, [&](DesSettings& s) {
                                            one_server(s);
                                            after_backward(s);
                                          }));
}

// BSP's layouts (issue 25, item 2): layer sharding loads the server of the largest shard most, and local aggregation
// (--local-aggregation host) sends one push per node, after the node's gradients met at its leader over the intra-node
// link. Both fidelities model both; they agree, and each layout does what it is for.
TEST(DesAgreesWithAnalytical, BspShardingAndLocalAggregation) {
  const auto p = toy();
  auto c = uniform_link(1e9, kAlpha);
  c.workers_per_node = 4;
  c.intra_node_bytes_per_second = 1e10;
  c.intra_node_alpha_seconds = 1e-5;
  c.gamma_seconds_per_byte = 1e-11;
  for (int64_t workers : {4, 6, 8}) {
    for (int64_t servers : {1, 2}) {
      for (const std::string sharding : {"memory", "layer"}) {
        for (const bool aggregate : {false, true}) {
          const double analytical = predict_bsp(p, workers, servers, c, {sharding, aggregate}).iteration_seconds;
          const double simulated = des("bsp", workers, c, [&](DesSettings& s) {
            s.servers = servers;
            s.sharding = sharding;
            s.overlap = "none";
            s.local_aggregation = aggregate ? "host" : "none";
          });
          // Uneven loads (layer shards of different sizes; a node with fewer workers, whose leader pushes first)
          // let the simulation start a small shard's reply, or a light node's push, while the rest is still under
          // way; the analytical model serialises them, an upper bound within 7%.
          const bool uneven = sharding == "layer" || (aggregate && workers % c.workers_per_node != 0);
          EXPECT_NEAR(simulated / analytical, 1, uneven ? 0.07 : kFewPercent)
              << workers << " workers, " << servers << " servers, " << sharding << (aggregate ? ", host" : "");
          EXPECT_LT(simulated / analytical, 1 + kFewPercent);
        }
      }
    }
  }
  // The closed form: layer sharding of the toy's 1M, 0.5M and 0.25M floats over 2 servers puts 4 MB on one (memory
  // sharding: 3.5 MB each), and 8 workers' pushes of it queue at that server's link.
  const double m = p.gradient_bytes(), largest = 4e6, compute = p.forward_seconds() + p.backward_seconds();
  const double push = kAlpha + std::max(m / c.worker_share_bytes_per_second(8), 8 * largest / 1e9);
  EXPECT_NEAR(predict_bsp(p, 8, 2, c, {"layer"}).iteration_seconds,
              compute + 2 * push + 8 * largest * 1e-11 + 1e-10 * largest, 1e-12);
  EXPECT_GT(predict_bsp(p, 8, 2, c, {"layer"}).iteration_seconds, predict_bsp(p, 8, 2, c).iteration_seconds);
  // Local aggregation: 2 pushes instead of 8 reach the one server, for 2 hand-overs of m on the intra-node link.
  const double one_push = kAlpha + std::max(m / 1e9, 2 * m / 1e9);
  const double hand_over = 1e-5 + 3 * m / 1e10;
  EXPECT_NEAR(predict_bsp(p, 8, 1, c, {"memory", true}).iteration_seconds,
              compute + 2 * hand_over + 3 * m * 1e-11 + 2 * one_push + 2 * m * 1e-11 + 1e-10 * m, 1e-12);
  EXPECT_LT(des("bsp", 8, c,
                [](DesSettings& s) {
                  s.servers = 1;
                  s.local_aggregation = "host";
                }),
            0.5 * des("bsp", 8, c, [](DesSettings& s) { s.servers = 1; }))
      << "a quarter of the pushes into a server-bound round";
  // What distsgd train refuses.
  EXPECT_THROW(des("asp", 8, c, [](DesSettings& s) { s.local_aggregation = "host"; }), Error);
  EXPECT_THROW(des("bsp", 8, c, [](DesSettings& s) { s.local_aggregation = "node"; }), Error);
}

// Servers on the workers' nodes (ClusterDescription::server_placement, as TensorFlow's distributed runs and BytePS):
// their traffic shares the nodes' links, and a worker reaches its own node's server without the network. Both
// fidelities model it; they agree, and the placement does what it is for.
TEST(DesAgreesWithAnalytical, ServersOnTheWorkersNodesShareTheirLinks) {
  const auto p = toy();
  auto c = uniform_link(1e9, kAlpha);
  c.workers_per_node = 4;
  c.intra_node_bytes_per_second = 1e10;
  c.intra_node_alpha_seconds = 1e-5;
  auto own = c;
  c.server_placement = ClusterDescription::ServerPlacement::kWorkerNodes;
  for (int64_t workers : {4, 8, 16}) {
    for (int64_t servers : {int64_t{1}, workers / 4, workers / 2}) {
      for (const bool aggregate : {false, true}) {
        const PsLayout layout{"memory", aggregate};
        const double analytical = predict_bsp(p, workers, servers, c, layout).iteration_seconds;
        const double simulated = des("bsp", workers, c, [&](DesSettings& s) {
          s.servers = servers;
          s.overlap = "none";
          s.local_aggregation = aggregate ? "host" : "none";
        });
        // As with servers behind links of their own: the analytical round is the busiest link's, an upper bound
        // (a node with fewer servers, or none, starts its replies while the busiest one still takes pushes).
        EXPECT_NEAR(simulated / analytical, 1, 0.07)
            << workers << " workers, " << servers << " servers" << (aggregate ? ", host" : "");
        EXPECT_LT(simulated / analytical, 1 + kFewPercent);
      }
    }
  }
  // The asynchronous models' closed forms hold where the links are not saturated (ParameterServerAlgorithms; where
  // they are, the closed forms' caps are 35-70% optimistic with either placement): a worker's transfer is its own
  // node's shards over its intra-node link and the others' over the network, at once.
  auto fast = c;
  fast.worker_bytes_per_second = fast.server_bytes_per_second = 1e10;
  fast.intra_node_bytes_per_second = 4e10;
  for (int64_t workers : {4, 8, 16}) {
    for (const std::string algorithm : {"asp", "easgd", "aladdin"}) {
      const double analytical = algorithm == "asp" ? predict_asp(p, workers, workers / 4, fast).iteration_seconds
                                : algorithm == "easgd"
                                    ? predict_easgd(p, workers, workers / 4, 1, fast).iteration_seconds
                                    : predict_aladdin(p, workers, workers / 4, 4, fast).iteration_seconds;
      const double simulated = des(algorithm, workers, fast, [&](DesSettings& s) {
        s.servers = workers / 4;
        s.overlap = "none";
        s.tau = 1;
      });
      // Four workers a server queue its updates, which the closed forms leave out: 3-4% with servers behind links
      // of their own here, up to 6% on the workers' nodes.
      EXPECT_NEAR(simulated / analytical, 1, 0.07) << algorithm << ", " << workers << " workers";
    }
  }
  // ALADDIN where the worker's uplink sets the pace (as in ParameterServerAlgorithms): half of each model is for
  // its own node's server, over the intra-node link, so the uplink rests half as long as with servers of their own.
  auto slow = c;
  slow.worker_bytes_per_second = slow.server_bytes_per_second = 2e8;
  auto slow_own = slow;
  slow_own.server_placement = ClusterDescription::ServerPlacement::kOwnLinks;
  const double aladdin = predict_aladdin(p, 8, 2, 4, slow).iteration_seconds;
  EXPECT_NEAR(des("aladdin", 8, slow, [](DesSettings& s) { s.servers = 2; }) / aladdin, 1, 0.05);
  EXPECT_NEAR(aladdin / predict_aladdin(p, 8, 2, 4, slow_own).iteration_seconds, 0.5, 0.01);
  // One node: every message stays inside it, so the node's link carries nothing, and BSP is faster than with a
  // server behind a link of its own.
  const auto inside = run("bsp", 4, c, [](DesSettings& s) {
    s.servers = 1;
    s.overlap = "none";
    s.local_aggregation = "host";
  });
  for (const auto& port : inside.utilisation) {
    if (port.name == "node_out" || port.name == "node_in") EXPECT_EQ(port.max, 0) << port.name;
  }
  const PsLayout host{"memory", true};
  EXPECT_LT(predict_bsp(p, 4, 1, c, host).iteration_seconds, predict_bsp(p, 4, 1, own, host).iteration_seconds);
  // A server on every node, local aggregation: each node's link carries the other nodes' share of its push, (N-1)/N
  // of m each way, where servers of their own would take a whole m per node on their links. The closed form:
  const double m = p.gradient_bytes(), compute = p.forward_seconds() + p.backward_seconds();
  for (int64_t nodes : {2, 4}) {
    const double push = kAlpha + std::max((nodes - 1.0) / nodes * m, m / nodes * (nodes - 1)) / 1e9;
    const double hand_over = 1e-5 + 3 * m / 1e10;
    EXPECT_NEAR(predict_bsp(p, 4 * nodes, nodes, c, host).iteration_seconds,
                compute + 2 * hand_over + 2 * push + 1e-10 * m / nodes, 1e-9 * compute)
        << nodes << " nodes";
  }
}

// BSP's pushes during backward (--overlap wfbp, the default), with and without local aggregation (whose buckets then
// go to the node's leader as backward produces them): the analytical model's rounds of bucket pieces against the
// simulator's flows. Where one link or one shard sets the pace (servers behind links of their own, or local
// aggregation) the two agree; where several workers of a node push to several shards, the shared links are booked a
// leg at a time where the simulator shares their rate: within a quarter, not a few percent.
TEST(DesAgreesWithAnalytical, BspPushesDuringBackwardAndPipelinedLocalAggregation) {
  const auto p = toy();
  auto own = uniform_link(1e9, kAlpha);
  own.workers_per_node = 4;
  own.intra_node_bytes_per_second = 1e10;
  own.intra_node_alpha_seconds = 1e-5;
  auto colocated = own;
  colocated.server_placement = ClusterDescription::ServerPlacement::kWorkerNodes;
  auto one_per_node = uniform_link(1e9, kAlpha);
  for (const auto* c : {&one_per_node, &own, &colocated}) {
    for (int64_t workers : {4, 8, 16}) {
      for (int64_t servers : {int64_t{1}, workers / 4, workers / 2}) {
        for (const bool aggregate : {false, true}) {
          PsLayout layout{"memory", aggregate, true};
          const double analytical = predict_bsp(p, workers, servers, *c, layout).iteration_seconds;
          const double simulated = des("bsp", workers, *c, [&](DesSettings& s) {
            s.servers = servers;
            s.overlap = "wfbp";
            s.local_aggregation = aggregate ? "host" : "none";
          });
          layout.wait_free = false;
          const double after_backward = predict_bsp(p, workers, servers, *c, layout).iteration_seconds;
          const std::string where = std::to_string(workers) + " workers, " + std::to_string(servers) + " servers" +
                                    (aggregate ? ", host" : "") + (c == &colocated ? ", on the nodes" : "");
          // The rounds' flows share the links max-min fairly in both. Servers on the nodes: the analytical model
          // leaves out the hand-over's share of the intra-node link and how far the workers of a node drift apart.
          const double within = c == &colocated ? 0.08 : 0.01;
          EXPECT_NEAR(simulated / analytical, 1, within) << where;
          // Pushing during backward hides the first buckets' rounds wherever one shard takes every piece.
          if (servers == 1) EXPECT_LT(analytical, after_backward - 1e-4) << where;
        }
      }
    }
  }
}

// ASP under wait-free backprop (the default): a worker's pieces as rounds per shard while backward goes on, each
// processed alone (sim/analytical/asynchronous_model.cpp). One worker, or one server on links fast enough that the
// server's capacity does not bind: the simulation's figure. Several workers pushing to as many shards: the simulated
// workers start at spread phases (sim/platform/start_phases.hpp), so each mostly finds its shards free, as the model
// (one worker's rounds) takes it: within 5%. (Started together, identical workers pushed their first bucket to the
// last shard at once, and the simulation was up to 18% slower.)
TEST(DesAgreesWithAnalytical, AspPushesDuringBackward) {
  const auto p = toy();
  for (const double rate : {2e8, 1e9, 1e10}) {
    const auto c = uniform_link(rate, kAlpha);
    for (int64_t workers : {1, 2, 4, 8}) {
      for (int64_t servers : {int64_t{1}, workers}) {
        PsLayout layout{"memory", false, true};
        const double analytical = predict_asp(p, workers, servers, c, layout).iteration_seconds;
        const double simulated = des("asp", workers, c, [&](DesSettings& s) {
          s.servers = servers;
          s.overlap = "wfbp";
        });
        const std::string where = std::to_string(rate) + " B/s, " + std::to_string(workers) + " workers, " +
                                  std::to_string(servers) + " servers";
        if (workers == 1 || (servers == 1 && rate >= 1e10)) {
          EXPECT_NEAR(simulated / analytical, 1, 0.01) << where;
        } else if (servers == workers) {
          EXPECT_NEAR(simulated / analytical, 1, 0.05) << where;
        }
        if (workers == 1 && rate <= 1e9) {  // pushes long enough for backward to hide a part
          layout.wait_free = false;
          EXPECT_LT(analytical, predict_asp(p, 1, servers, c, layout).iteration_seconds - 1e-4) << where;
        }
      }
    }
  }
}

// SSP sends its gradient without waiting (algo/ssp.cpp, a ring of send buffers): the push is hidden under compute
// except where a pull follows it (the pull's request reaches each shard's handler of the worker after the push), and
// an iteration is the compute and update plus its share of the pulls (what is left of the push, the request, then
// the model back), or where the uplink is the slower, a push plus the link's rest at each pull. Pulls come every s + 1
// iterations and, with other workers, once more in between (the slowest clock a pull reports is one behind).
TEST(DesAgreesWithAnalytical, SspPushesWithoutWaitingAndPullsAsItsClocksSay) {
  const auto p = toy();
  for (double rate : {2e8, 1e9, 1e10}) {  // m / B = 35, 7, 0.7 ms; forward and backward 18 ms
    const auto c = uniform_link(rate, kAlpha);
    for (int64_t workers : {1, 4, 8}) {
      for (int64_t servers : {int64_t{1}, workers}) {
        for (int64_t staleness : {1, 3, 10}) {
          for (const std::string overlap : {"none", "wfbp"}) {
            const auto r = run("ssp", workers, c, [&](DesSettings& s) {
              s.staleness = staleness;
              s.servers = servers;
              s.overlap = overlap;
            });
            PsLayout layout;
            layout.wait_free = overlap == "wfbp";
            const double ratio =
                r.iteration_seconds / predict_ssp(p, workers, servers, staleness, c, layout).iteration_seconds;
            const std::string where = std::to_string(rate) + " B/s, " + std::to_string(workers) + " workers, " +
                                      std::to_string(servers) + " servers, s " + std::to_string(staleness) + ", " +
                                      overlap;
            if (rate >= 1e10) {
              EXPECT_NEAR(ratio, 1, 0.03) << where;
            } else if (workers == 1) {
              EXPECT_NEAR(ratio, 1, 0.08) << where;
            } else if (servers == workers) {  // a shard per worker: one worker's pulls, as the model takes them
              EXPECT_GE(ratio, 0.93) << where;
              EXPECT_LE(ratio, 1.05) << where;
            } else {  // one server's link for every worker: the caps, reached only in part (the pulls still meet)
              EXPECT_GE(ratio, 0.99) << where;
              EXPECT_LE(ratio, 1.3) << where;
            }
            // The clock gap at an iteration's start is never above s; with other workers it is 0 only for the
            // slowest (its own push is the last one a shard applies before its pull), 1 or more for the others:
            // they pull every s iterations and every s + 1.
            int64_t starts = 0, at_zero = 0;
            for (const auto& [gap, count] : r.clock_gap) {
              EXPECT_LE(gap, staleness) << where;
              starts += count;
              if (gap == 0) at_zero += count;
            }
            if (workers > 1) EXPECT_LE(at_zero, starts / workers) << where;
          }
        }
      }
    }
  }
}

TEST(DesAgreesWithAnalytical, DecentralizedAlgorithms) {
  const auto p = toy();
  for (int64_t workers : {2, 8}) {
    // SGP's push (and its wait for the peer's) is in the iteration without overlap, hidden with it.
    for (const auto& c : {uniform_link(1e9, kAlpha), uniform_link(1e10, kAlpha)}) {
      EXPECT_NEAR(des("sgp", workers, c, [](DesSettings& s) { s.sgp_overlap = 0; }) /
                      predict_sgp(p, workers, false, c).iteration_seconds,
                  1, kWithMerges);
      EXPECT_NEAR(des("sgp", workers, c, [](DesSettings& s) { s.sgp_overlap = 1; }) /
                      predict_sgp(p, workers, true, c).iteration_seconds,
                  1, kWithMerges);
    }
    const auto fast = uniform_link(1e11, kAlpha);  // communication a fraction of a percent of compute
    EXPECT_NEAR(des("gosgd", workers, fast) / predict_gosgd(p, workers, 0.01, fast).iteration_seconds, 1, kFewPercent);
    EXPECT_NEAR(des("gossip", workers, fast) / predict_gossip(p, workers, true, fast).iteration_seconds, 1,
                kWithMerges);
    EXPECT_NEAR(des("adpsgd", workers, fast) / predict_adpsgd(p, workers, fast).iteration_seconds, 1, kFewPercent);
  }
}

// Where the two fidelities parted, the simulator followed the real code, and the analytical models now do too:
// gossip's pull (it runs under forward and backward: PullGossip::before_forward starts it), AD-PSGD's exchange (m
// out, then the peer's m back, waited for by the active, odd, ranks only) and SSP's unwaited push (its own test).
TEST(DesAgreesWithAnalytical, WhereTheRealCodeDiffersTheSimulatorFollowsIt) {
  const auto p = toy();
  const auto c = uniform_link(1e9, kAlpha);  // m / B = 7 ms, forward and backward 18 ms
  const double pull = des("gossip", 4, c);
  EXPECT_NEAR(pull, p.forward_seconds() + p.backward_seconds() + 2 * 1e-10 * p.gradient_bytes(), 1e-3);
  EXPECT_NEAR(pull / predict_gossip(p, 4, true, c).iteration_seconds, 1, kWithMerges) << "both follow the real code";
  EXPECT_LT(pull, 0.8 * predict_gossip(p, 4, false, c).iteration_seconds) << "the push's exchange is in series";
  const auto slow = uniform_link(2e8, kAlpha);  // m / B = 35 ms: the exchange, twice that, sets the active rank's pace
  const auto r = run("adpsgd", 2, slow);
  const double pass = 1e-10 * p.gradient_bytes();
  const double exchange = 2 * (kAlpha + p.gradient_bytes() / 2e8) + 2 * pass;
  EXPECT_NEAR(r.per_worker[1].mean_seconds, exchange + pass, 0.02 * exchange);  // the active rank waits for it
  EXPECT_NEAR(r.per_worker[0].mean_seconds, p.forward_seconds() + p.backward_seconds() + pass,
              1e-3);  // the passive rank never waits
  EXPECT_NEAR(r.samples_per_second / predict_adpsgd(p, 2, slow).samples_per_second, 1, kWithMerges)
      << "the analytical model sums the two kinds' throughputs as the code runs them";
}

}  // namespace
}  // namespace distsgd::sim
