// What a decentralized run reports about its workers' models: the evaluated average of the push-sum family is
// weighted by the push-sum weights (sum_i w_i z_i / sum_i w_i, the value push-sum conserves), and every algorithm
// reports the age (staleness) of the models its workers merged, as parameter-server runs report theirs.
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

using distsgd::testing::read_file;
using distsgd::testing::run_distsgd;
using distsgd::testing::TempDir;

namespace {

const std::string kSmallRun =
    " --workers 4 --model mlp --mlp-width 16 --mlp-layers 1 --dataset synthetic --synthetic-train-size 2048 "
    "--synthetic-test-size 64 --batch-size 8 --threads 1 --no-checkpoint --progress-seconds 1000 --seed 3";

nlohmann::json run_small(const TempDir& dir, const std::string& flags) {
  auto r = run_distsgd("train" + kSmallRun + " " + flags + " --out " + (dir / "run") + " --overwrite");
  EXPECT_EQ(r.exit_code, 0) << flags << "\n" << r.output;
  if (r.exit_code != 0) return {};
  return nlohmann::json::parse(read_file(dir / "run/summary.json"));
}

double total(const nlohmann::json& summary, const std::string& key) {
  double sum = 0;
  for (const auto& w : summary["per_worker"]) sum += w[key].get<double>();
  return sum;
}

}  // namespace

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

// Every decentralized algorithm reports the ages, under a slow worker whose models lag behind.
TEST(DecentralizedStaleness, EveryAlgorithmReportsTheAgeOfMergedModels) {
  TempDir dir;
  for (const std::string algo : {"--algo gosgd --gossip-prob 1", "--algo gossip --gossip-mode pull",
                                 "--algo gossip --gossip-mode push", "--algo adpsgd"}) {
    const auto summary = run_small(dir, algo + " --lr 0.01 --max-steps 60 --slowdown 3:4");
    ASSERT_FALSE(summary.is_null()) << algo;
    EXPECT_GT(total(summary, "merged_models"), 0) << algo;
    EXPECT_GE(summary["staleness_mean"].get<double>(), 0) << algo;
    EXPECT_GE(summary["staleness_max"].get<double>(), summary["staleness_mean"].get<double>()) << algo;
    // The slow worker's models are merged iterations late by the faster ones.
    EXPECT_GT(summary["staleness_max"].get<int64_t>(), 0) << algo << "\n" << summary.dump(2);
  }
}
