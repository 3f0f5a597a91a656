// The decentralized algorithms end to end, each through the distsgd program and its launcher: conservation laws
// of their mixing with learning rate 0 (workers start from distinct models, --test-init-spread, and random
// delays are injected into every send and reply, --test-delay-ms), freedom from deadlock over thousands of
// exchanges, and accuracy on real data; and what a run reports about its workers' models: the evaluated average of
// the push-sum family is weighted by the push-sum weights (sum_i w_i z_i / sum_i w_i, the value push-sum conserves),
// and every algorithm reports the age (staleness) of the models its workers merged, as parameter-server runs do.
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <sstream>

using distsgd::testing::read_file;
using distsgd::testing::run_distsgd;
using distsgd::testing::TempDir;

namespace {

constexpr double kSpread = 0.01;
const std::string kDecentralizedSmallRun =
    " --workers 4 --model mlp --mlp-width 16 --mlp-layers 1 --dataset synthetic --synthetic-train-size 2048 "
    "--synthetic-test-size 64 --batch-size 8 --threads 1 --no-checkpoint --progress-seconds 1000 --seed 3";

nlohmann::json run_small(const TempDir& dir, const std::string& flags) {
  auto r = run_distsgd("train" + kDecentralizedSmallRun + " " + flags + " --out " + (dir / "run") + " --overwrite");
  EXPECT_EQ(r.exit_code, 0) << flags << "\n" << r.output;
  if (r.exit_code != 0) return {};
  return nlohmann::json::parse(read_file(dir / "run/summary.json"));
}

double total(const nlohmann::json& summary, const std::string& key) {
  double sum = 0;
  for (const auto& w : summary["per_worker"]) sum += w[key].get<double>();
  return sum;
}

// Mean over workers of ||x_i - mean(x)||^2 for x_i = x0 + spread * i: spread^2 * P * mean_i (i - 1.5)^2.
double initial_variance(const nlohmann::json& summary) {
  return kSpread * kSpread * summary["parameters"].get<double>() * 1.25;
}

// Push-sum family: with lr 0 the weights sum to 1 and sum_i w_i x_i is conserved once nothing is in flight.
void expect_push_sum_conserved(const std::string& flags) {
  TempDir dir;
  auto summary =
      run_small(dir, flags + " --lr 0 --epochs 100 --max-steps 200 --test-init-spread 0.01 --test-delay-ms 1");
  ASSERT_FALSE(summary.is_null());
  const double initial_mean = total(summary, "initial_parameter_sum") / 4;
  EXPECT_NEAR(total(summary, "gossip_weight"), 1.0, 1e-9) << summary.dump(2);
  EXPECT_NEAR(total(summary, "weighted_parameter_sum"), initial_mean, 1e-5 * std::abs(initial_mean)) << summary.dump(2);
  EXPECT_EQ(total(summary, "messages_sent"), total(summary, "messages_received")) << "nothing lost";
  EXPECT_GT(total(summary, "messages_sent"), 100);
  // The mixing did mix: the workers' models came closer.
  EXPECT_LT(summary["parameter_variance"].get<double>(), 0.5 * initial_variance(summary)) << summary.dump(2);
}

}  // namespace

TEST(DecentralizedConservation, GoSgdWeightsSumToOneAndWeightedMeanIsConserved) {
  expect_push_sum_conserved("--algo gosgd --gossip-prob 0.5");
}
TEST(DecentralizedConservation, PushGossipIsPushSum) { expect_push_sum_conserved("--algo gossip --gossip-mode push"); }
TEST(DecentralizedConservation, SgpWithoutOverlap) { expect_push_sum_conserved("--algo sgp --sgp-overlap 0"); }
TEST(DecentralizedConservation, SgpWithOverlap) { expect_push_sum_conserved("--algo sgp --sgp-overlap 1"); }

TEST(DecentralizedConservation, PullGossipConvergesToConsensus) {
  TempDir dir;
  auto summary = run_small(dir,
                           "--algo gossip --gossip-mode pull --lr 0 --epochs 100 --max-steps 200 "
                           "--test-init-spread 0.01 --test-delay-ms 1");
  ASSERT_FALSE(summary.is_null());
  EXPECT_EQ(total(summary, "pulls"), 800);
  EXPECT_EQ(total(summary, "pulls_served"), 800);
  EXPECT_LT(summary["parameter_variance"].get<double>(), 0.01 * initial_variance(summary)) << summary.dump(2);
}

// AD-PSGD: pairwise averaging conserves sum_i x_i with lr 0; under random delays on every send and reply
// (and one slow worker), 4 workers complete thousands of exchanges without deadlock, in bounded time.
TEST(DecentralizedConservation, AdpsgdConservesTheSumUnderRandomDelaysWithoutDeadlock) {
  TempDir dir;
  const auto start = std::chrono::steady_clock::now();
  auto summary = run_small(dir,
                           "--algo adpsgd --lr 0 --epochs 100 --max-steps 1500 --test-init-spread 0.01 "
                           "--test-delay-ms 2 --slowdown 2:3 --timeout 60");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(summary.is_null());
  EXPECT_LT(seconds, 120) << "no exchange may stall";
  const double initial = total(summary, "initial_parameter_sum");
  EXPECT_NEAR(total(summary, "parameter_sum"), initial, 1e-5 * std::abs(initial)) << summary.dump(2);
  EXPECT_EQ(total(summary, "exchanges_initiated"), 3000) << "two active workers x 1500 iterations";
  EXPECT_EQ(total(summary, "exchanges_served"), 3000);
  EXPECT_LT(summary["parameter_variance"].get<double>(), 0.01 * initial_variance(summary)) << summary.dump(2);
  std::cout << "AD-PSGD: 3000 exchanges with random delays in " << seconds << " s" << std::endl;
}

// Every algorithm trains (lr > 0) under random delays and a slow worker, and reports its metrics.
TEST(DecentralizedMetrics, EveryAlgorithmReportsAverageWorker0VarianceAndBytes) {
  TempDir dir;
  for (const std::string algo : {"--algo gosgd --gossip-prob 0.1", "--algo gossip --gossip-mode pull",
                                 "--algo gossip --gossip-mode push", "--algo adpsgd", "--algo sgp --sgp-overlap 1"}) {
    auto summary = run_small(dir, algo + " --lr 0.05 --epochs 1 --max-steps 60 --test-delay-ms 1 --slowdown 3:3");
    ASSERT_FALSE(summary.is_null()) << algo;
    EXPECT_GT(summary["bytes_sent_per_worker"].get<double>(), 0) << algo;
    EXPECT_TRUE(summary["test_accuracy_worker0"].is_number()) << algo;
    EXPECT_GE(summary["parameter_variance"].get<double>(), 0) << algo;
    std::istringstream metrics(read_file(dir / "run/metrics.jsonl"));
    std::string line;
    ASSERT_TRUE(std::getline(metrics, line)) << algo;
    auto m = nlohmann::json::parse(line);
    for (const char* key : {"test_accuracy", "test_accuracy_worker0", "parameter_variance", "bytes_sent_per_worker"}) {
      EXPECT_TRUE(m.contains(key)) << algo << " lacks " << key << " in metrics.jsonl";
    }
  }
}

// GoSGD that never gossips: each receiving thread hears from its peers only through keep-alive messages, which
// must come often enough that no wait reaches the (short) timeout although the run lasts three times longer.
TEST(DecentralizedTermination, IdlePeersKeepEachOtherAlive) {
  TempDir dir;
  auto summary = run_small(dir,
                           "--algo gosgd --gossip-prob 0 --lr 0.01 --epochs 1000 --time-budget 10 --timeout 3 "
                           "--slowdown 0:30 --slowdown 1:30 --slowdown 2:30 --slowdown 3:30");
  ASSERT_FALSE(summary.is_null());
  EXPECT_GT(summary["wall_seconds"].get<double>(), 9) << "the test needs a run three timeouts long";
  EXPECT_EQ(total(summary, "messages_sent"), 0);
}

// Under a time budget a straggler holds no GoSGD, gossip or AD-PSGD worker (each stops on its own, as the asynchronous
// PS workers do), while SGP's step t waits for its in-neighbours' messages, so its workers keep the straggler's pace.
// The straggler is 20x slower: a pull-gossip worker that picks it waits for its reply (up to one of its steps), so
// free workers do about S / (1 + S/6) times its steps; with S = 8 that fell to 1.84x on a loaded fresh machine, with
// S = 20 it stayed at 4.0-4.3x there (gosgd 7x, AD-PSGD's worker 0 above 10x; SGP 1.0x).
TEST(DecentralizedTermination, AStragglerHoldsOnlySgpWorkersUnderATimeBudget) {
  for (const std::string algo : {"gosgd --gossip-prob 0.5", "gossip --gossip-mode pull", "adpsgd", "sgp"}) {
    TempDir dir;
    auto summary = run_small(dir, "--algo " + algo + " --lr 0.01 --epochs 1000 --time-budget 3 --slowdown 3:20");
    ASSERT_FALSE(summary.is_null()) << algo;
    EXPECT_EQ(summary["stop_reason"], "time_budget") << algo;
    const auto& workers = summary["per_worker"];
    ASSERT_EQ(workers.size(), 4u) << algo;
    const double fast = workers[0]["steps"].get<double>(), slow = workers[3]["steps"].get<double>();
    if (algo == "sgp") {
      EXPECT_LT(fast, 1.5 * slow) << algo << ": held by its in-neighbours\n" << summary.dump(2);
    } else {
      // Held, they would do the straggler's steps; free, up to 20x as many, less what the fast workers' waits for
      // replies (gossip pull) cost on the shared cores.
      EXPECT_GT(fast, 2 * slow) << algo << ": the fast workers were held by the slow one\n" << summary.dump(2);
    }
  }
}

TEST(DecentralizedFlags, BadValuesAreRefused) {
  TempDir dir;
  auto one = run_distsgd("train --algo sgp --workers 1 --out " + (dir / "a"));
  EXPECT_NE(one.exit_code, 0);
  EXPECT_NE(one.output.find("--workers 2 or more"), std::string::npos) << one.output;
  auto mode = run_distsgd("train --algo gossip --gossip-mode sideways --workers 2 --out " + (dir / "b"));
  EXPECT_NE(mode.exit_code, 0);
  EXPECT_NE(mode.output.find("--gossip-mode"), std::string::npos) << mode.output;
  auto prob = run_distsgd("train --algo gosgd --gossip-prob 2 --workers 2 --out " + (dir / "c"));
  EXPECT_NE(prob.exit_code, 0);
  EXPECT_NE(prob.output.find("--gossip-prob"), std::string::npos) << prob.output;
}

// The acceptance runs (4 workers, lenet5 on Fashion-MNIST, 2 epochs) are VirtualAcceptance.* in
// acceptance_test.cpp.

// With lr 0 push-sum conserves sum_i w_i z_i = the mean of the starting models (x0 + 0.01 i): the evaluated average
// is that model exactly. After a few steps the weights have drifted apart (random peers) while the z_i still differ,
// so the plain mean of the z_i is elsewhere.
TEST(PushSumEvaluation, AverageIsWeightedByThePushSumWeights) {
  for (const std::string algo : {"--algo gossip --gossip-mode push", "--algo gosgd --gossip-prob 0.5"}) {
    TempDir dir;
    const auto summary =
        run_small(dir, algo + " --lr 0 --epochs 100 --max-steps 5 --test-init-spread 0.01 --test-delay-ms 1");
    ASSERT_FALSE(summary.is_null());
    const double initial_mean = total(summary, "initial_parameter_sum") / 4;
    EXPECT_NEAR(summary["average_parameter_sum"].get<double>(), initial_mean, 1e-6 * std::abs(initial_mean))
        << algo << "\n"
        << summary.dump(2);
    // The weights differ, so weighting matters: the plain mean of the workers' sums is elsewhere.
    double weight_min = 1, weight_max = 0, plain_mean = 0;
    for (const auto& w : summary["per_worker"]) {
      const double weight = w["gossip_weight"].get<double>();
      weight_min = std::min(weight_min, weight);
      weight_max = std::max(weight_max, weight);
      plain_mean += w["weighted_parameter_sum"].get<double>() / weight / 4;
    }
    EXPECT_GT(weight_max - weight_min, 0.01) << algo;
    EXPECT_GT(std::abs(plain_mean - initial_mean), 1e-4 * std::abs(initial_mean)) << algo << "\n" << summary.dump(2);
  }
}

// SGP merges one message per worker and iteration; letting them arrive an iteration late (--sgp-overlap 1) makes
// them older. (The wait counts messages from any in-peer, so even without overlap some are merged an iteration or
// two late: 4 workers, 40 steps gave a mean age of 0.24 without overlap and 0.9 with it.)
TEST(DecentralizedStaleness, SgpMessagesAreOlderWithOverlap) {
  TempDir dir;
  const auto in_step = run_small(dir, "--algo sgp --sgp-overlap 0 --lr 0.01 --max-steps 40");
  ASSERT_FALSE(in_step.is_null());
  EXPECT_EQ(total(in_step, "merged_models"), 4 * 40) << "one message per worker and iteration";
  const auto overlapped = run_small(dir, "--algo sgp --sgp-overlap 1 --lr 0.01 --max-steps 40");
  ASSERT_FALSE(overlapped.is_null());
  EXPECT_EQ(total(overlapped, "merged_models"), 4 * 40);
  EXPECT_GT(overlapped["staleness_mean"].get<double>(), in_step["staleness_mean"].get<double>())
      << in_step.dump(2) << "\n"
      << overlapped.dump(2);
  EXPECT_GE(overlapped["staleness_max"].get<int64_t>(), 1);
}

// Every decentralized algorithm reports the ages, under a slow worker whose models lag behind. On the virtual cluster
// (the algorithms' own code in one process, timed by an analytical profile: the same order of merges at every load).
TEST(VirtualDecentralizedStaleness, EveryAlgorithmReportsTheAgeOfMergedModels) {
  TempDir dir;
  for (const std::string algo : {"--algo gosgd --gossip-prob 1", "--algo gossip --gossip-mode pull",
                                 "--algo gossip --gossip-mode push", "--algo adpsgd"}) {
    const auto summary =
        run_small(dir, algo + " --lr 0.01 --max-steps 60 --slowdown 3:4 --virtual --profile titan-v --cluster 10gbe");
    ASSERT_FALSE(summary.is_null()) << algo;
    EXPECT_GT(total(summary, "merged_models"), 0) << algo;
    EXPECT_GE(summary["staleness_mean"].get<double>(), 0) << algo;
    EXPECT_GE(summary["staleness_max"].get<double>(), summary["staleness_mean"].get<double>()) << algo;
    // The slow worker's models are merged iterations late by the faster ones.
    EXPECT_GT(summary["staleness_max"].get<int64_t>(), 0) << algo << "\n" << summary.dump(2);
  }
}
