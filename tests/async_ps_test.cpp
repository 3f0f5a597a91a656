// Asynchronous parameter-server algorithms: the math of their rules in process, and their invariants through
// the distsgd program.
#include "distsgd/algo/ps/elastic.hpp"
#include "distsgd/algo/ps/lazy_averager.hpp"
#include "distsgd/core/config.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/optim/sgd.hpp"
#include "distsgd/train/checkpoint.hpp"
#include "distsgd/train/options.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <utility>
#include <vector>

using distsgd::testing::read_file;
using distsgd::testing::run_distsgd;
using distsgd::testing::TempDir;

TEST(Easgd, OneExchangePreservesTheSumOfServerAndWorker) {
  torch::manual_seed(4);
  auto x_tilde = torch::randn({1000});
  auto x_worker = torch::randn({1000});
  const auto sum_before = x_tilde + x_worker;
  auto worker_after = torch::empty({1000});
  distsgd::algo::ps::elastic_exchange(x_tilde, x_worker, 0.225, worker_after);
  EXPECT_TRUE(torch::allclose(x_tilde + worker_after, sum_before, 0, 1e-6));
  // And it moved both toward each other by alpha times their difference.
  EXPECT_TRUE(torch::allclose(worker_after, x_worker - 0.225 * (x_worker - (sum_before - x_worker)), 0, 1e-5));
  // Dyadic values make every operation exact: then the sum is preserved bit for bit.
  auto a = torch::tensor({1.0f, -2.5f, 0.75f}), b = torch::tensor({3.0f, 0.5f, -0.25f});
  const auto exact_sum = a + b;
  auto b_after = torch::empty({3});
  distsgd::algo::ps::elastic_exchange(a, b, 0.5, b_after);
  EXPECT_TRUE(torch::equal(a + b_after, exact_sum));
}

TEST(Aladdin, AlphaFollowsTheSpecFormulas) {
  using distsgd::algo::ps::aladdin_alpha;
  EXPECT_DOUBLE_EQ(aladdin_alpha(distsgd::algo::ps::AlphaRule::kText, 4, 4, 123), 1 - 1 / std::sqrt(16.0));
  EXPECT_DOUBLE_EQ(aladdin_alpha(distsgd::algo::ps::AlphaRule::kCount, 4, 4, 9), 1 - 1 / 3.0);
  EXPECT_DOUBLE_EQ(aladdin_alpha(distsgd::algo::ps::AlphaRule::kCount, 4, 4, 1), 0.0);
  EXPECT_DOUBLE_EQ(aladdin_alpha(distsgd::algo::ps::AlphaRule::kCount, 4, 4, 0),
                   0.0);  // clamped, never negative or NaN
}

// Hand-computed: n=2 workers, pi=2, lr 0.5. Gradients 1 (w0), 3 (w1), 5 (w0): worker 0's second gradient
// triggers x~ -= 0.5 * (1+3+5)/3 = 1.5 and resets g_acc, c and c_0 (not c_1). Worker 1's count is then 1, so
// its next gradient (7) is its second and triggers at once, averaging the one gradient accumulated since: 7.
TEST(Aladdin, LazyAveragedUpdateOnAHandComputedCase) {
  distsgd::algo::ps::LazyAverager averager(1, 2, 2);
  auto x = torch::tensor({10.0f});
  distsgd::optim::MomentumSgd plain_sgd(1, 0, 0);
  EXPECT_EQ(averager.add(0, torch::tensor({1.0f}), x, 0.5, plain_sgd), 0);
  EXPECT_EQ(averager.add(1, torch::tensor({3.0f}), x, 0.5, plain_sgd), 0);
  EXPECT_EQ(x.item<float>(), 10.0f);  // nothing applied before a trigger
  EXPECT_EQ(averager.add(0, torch::tensor({5.0f}), x, 0.5, plain_sgd), 3);
  EXPECT_FLOAT_EQ(x.item<float>(), 8.5f);
  EXPECT_EQ(averager.accumulated(), 0);
  EXPECT_EQ(averager.add(1, torch::tensor({7.0f}), x, 0.5, plain_sgd), 1);
  EXPECT_FLOAT_EQ(x.item<float>(), 8.5f - 0.5f * 7.0f);
  EXPECT_EQ(averager.add(1, torch::tensor({1.0f}), x, 0.5, plain_sgd), 0);  // c_1 was reset by its own trigger
}

// --momentum-at both|server: the server's lazy updates go through its momentum buffer (mu 0.9): the same
// gradients give x~ = 10 - 0.5*3 = 8.5, then v = 0.9*3 + 7 = 9.7 and x~ = 8.5 - 0.5*9.7 = 3.65.
TEST(Aladdin, LazyUpdateWithMomentumAtTheServer) {
  distsgd::algo::ps::LazyAverager averager(1, 2, 2);
  distsgd::optim::MomentumSgd momentum_sgd(1, 0.9, 0);
  auto x = torch::tensor({10.0f});
  for (auto [worker, g] : {std::pair{0, 1.0f}, {1, 3.0f}, {0, 5.0f}}) {
    averager.add(worker, torch::tensor({g}), x, 0.5, momentum_sgd);
  }
  EXPECT_FLOAT_EQ(x.item<float>(), 8.5f);
  EXPECT_EQ(averager.add(1, torch::tensor({7.0f}), x, 0.5, momentum_sgd), 1);
  EXPECT_FLOAT_EQ(x.item<float>(), 3.65f);
}

namespace {
const std::string kAsyncSmallRun =
    " --model lenet5 --dataset synthetic --synthetic-train-size 1920 --synthetic-test-size 64 --epochs 100 "
    "--threads 1 --no-checkpoint --progress-seconds 1000 --seed 9";
}

// ASP with one worker is single-process SGD: every gradient applied at once with momentum at the server.
TEST(Asp, OneWorkerEqualsSingleProcessSgd) {
  TempDir dir;
  auto sgd = run_distsgd("train --algo sgd --max-steps 20" + kAsyncSmallRun + " --out " + (dir / "sgd"));
  ASSERT_EQ(sgd.exit_code, 0) << sgd.output;
  auto asp = run_distsgd("train --algo asp --workers 1 --servers 2 --max-steps 20" + kAsyncSmallRun + " --out " +
                         (dir / "asp"));
  ASSERT_EQ(asp.exit_code, 0) << asp.output;
  auto a = distsgd::train::load_parameters(dir / "sgd/parameters.pt");
  auto b = distsgd::train::load_parameters(dir / "asp/parameters.pt");
  EXPECT_LT(((a - b).norm() / a.norm()).item<double>(), 1e-5);
}

// The SSP bound, enforced at the server: under uneven worker speeds no pull is released while the slowest
// worker is more than s clocks behind, and each released pull sees every gradient of the clocks below c - s.
TEST(Ssp, BoundHoldsUnderSlowWorkersAndStalenessZeroIsLockstep) {
  TempDir dir;
  for (int s : {2, 0}) {
    const std::string out = dir / ("s" + std::to_string(s));
    auto r = run_distsgd("train --algo ssp --workers 3 --servers 2 --staleness " + std::to_string(s) +
                         " --slowdown 1:4 --slowdown 2:2 --max-steps 40 --lr 0.01" + kAsyncSmallRun + " --out " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto summary = nlohmann::json::parse(read_file(out + "/summary.json"));
    ASSERT_EQ(summary["server_statistics"].size(), 2u);
    int64_t bound_pulls = 0;  // pulls of workers that got more than s clocks ahead between periodic pulls
    for (const auto& worker : summary["per_worker"]) {
      bound_pulls += static_cast<int64_t>(worker["ssp_bound_pulls"].get<double>());
    }
    for (const auto& shard : summary["server_statistics"]) {
      EXPECT_EQ(shard["ssp_pulls"], 3 * (40 / (s + 1)) + bound_pulls) << shard.dump();
      EXPECT_LE(shard["ssp_max_pull_gap"].get<int64_t>(), s) << shard.dump();
      EXPECT_GE(shard["ssp_min_version_surplus"].get<int64_t>(), 0) << shard.dump();
      EXPECT_EQ(shard["updates"], 3 * 40) << "every gradient applied once";
      EXPECT_EQ(shard["gradients_received"], 3 * 40) << "every gradient received";
      EXPECT_GT(shard["cpu_seconds"].get<double>(), 0) << "the server's process applied 120 gradients";
    }
    EXPECT_GT(summary["staleness_max"].get<int64_t>(), 0);
  }
}

// Every asynchronous algorithm and variant runs to the end with evaluation on the servers' model, and reports
// staleness. On the virtual cluster (the algorithms' own workers and servers in one process: deterministic, beside
// other tests); each algorithm's multi-process run is EmulatedCluster.EveryAlgorithmTrainsAsOnLoopback's.
TEST(VirtualAsyncAlgorithms, EachRunsAndReportsItsFigures) {
  TempDir dir;
  for (const std::string algo : {"asp", "ssp --staleness 3", "easgd --tau 2", "aladdin", "aladdin --aladdin-variant l1",
                                 "aladdin --aladdin-variant l2 --aladdin-alpha count", "aladdin --momentum-at both"}) {
    auto r = run_distsgd("train --algo " + algo + " --workers 3 --servers 1 --max-steps 30 --lr 0.01" + kAsyncSmallRun +
                         distsgd::testing::kVirtualLenet5Timing + " --out " + (dir / "run") + " --overwrite");
    ASSERT_EQ(r.exit_code, 0) << algo << "\n" << r.output;
    auto summary = nlohmann::json::parse(read_file(dir / "run/summary.json"));
    EXPECT_EQ(summary["steps"], 30) << algo;
    EXPECT_TRUE(std::isfinite(summary["test_loss"].get<double>())) << algo;
    EXPECT_TRUE(summary.contains("staleness_mean")) << algo;
    // Workers of these algorithms hold different parameters (ASP: each its own reply of x~).
    EXPECT_GT(summary["parameter_variance"].get<double>(), 0) << algo;
  }
}

// --momentum-at is checked against what each algorithm declares (AlgorithmInfo::momentum_placements).
TEST(MomentumPlacement, FlagIsCheckedAgainstTheAlgorithm) {
  auto error_of = [](const std::string& algorithm, const std::string& placement) -> std::string {
    distsgd::TrainConfig c;
    c.algorithm = algorithm;
    c.workers = 2;
    c.servers = algorithm == "arsgd" ? 0 : 1;
    try {
      distsgd::train::set_option(c, "--momentum-at", {placement});
      distsgd::train::validate(c);
      return "";
    } catch (const distsgd::Error& e) {
      return e.what();
    }
  };
  for (const std::string placement : {"auto", "worker", "server"}) {
    for (const std::string algorithm : {"asp", "ssp", "aladdin"}) EXPECT_EQ(error_of(algorithm, placement), "");
  }
  EXPECT_EQ(error_of("aladdin", "both"), "");
  EXPECT_EQ(error_of("bsp", "auto"), "");
  EXPECT_NE(error_of("bsp", "server").find("--momentum-at applies to asp, ssp, aladdin only (not bsp)"),
            std::string::npos);
  EXPECT_NE(error_of("arsgd", "worker").find("(not arsgd)"), std::string::npos);
  EXPECT_NE(
      error_of("asp", "both").find("--momentum-at both is not a place for asp's momentum (it takes worker, server"),
      std::string::npos)
      << error_of("asp", "both");
  EXPECT_NE(error_of("ssp", "nowhere").find("--momentum-at must be worker, server, both or auto"), std::string::npos);
}

// The acceptance runs (4 workers, lenet5 on Fashion-MNIST, 2 epochs) are VirtualAcceptance.* in
// acceptance_test.cpp, with their recipes.

// Under --time-budget the asynchronous algorithms' workers stop on their own, so a straggler holds nobody: with
// worker 2 eight times slower, the fast workers keep going and the cluster's samples/s is the sum of the workers'
// own rates (SSP: the slow worker retires its clock when it stops, so no pull waits for it; s=2 keeps the others
// within 3 clocks of it until then). BSP's workers agree on the stop (they meet at the server every step).
TEST(AsyncAlgorithms, TimeBudgetLetsIndependentWorkersStopOnTheirOwn) {
  TempDir dir;
  // Momentum at the server with stale gradients can diverge on this task (the divergence check then ends the run),
  // and this test is about who waits for whom, so the asynchronous servers take plain SGD.
  for (const std::string algo : {"asp --momentum 0", "ssp --staleness 2 --momentum 0", "easgd", "aladdin", "bsp"}) {
    const std::string out = dir / "run";
    auto r = run_distsgd(
        "train --algo " + algo +
        " --workers 3 --servers 1 --time-budget 3 --slowdown 2:8 "
        "--model lenet5 --dataset synthetic --synthetic-train-size 1920 --synthetic-test-size 64 "
        "--epochs 1000 --threads 1 --no-checkpoint --progress-seconds 1000 --timeout 60 --overwrite --out " +
        out);
    ASSERT_EQ(r.exit_code, 0) << algo << "\n" << r.output;
    auto summary = nlohmann::json::parse(read_file(out + "/summary.json"));
    EXPECT_EQ(summary["stop_reason"], "time_budget") << algo;
    EXPECT_TRUE(std::isfinite(summary["test_accuracy"].get<double>())) << algo;
    const auto& workers = summary["per_worker"];
    ASSERT_EQ(workers.size(), 3u);
    const double fast = workers[0]["steps"].get<double>(), slow = workers[2]["steps"].get<double>();
    double rates = 0;
    for (const auto& w : workers) rates += w["samples_per_second"].get<double>();
    EXPECT_NEAR(summary["samples_per_second"].get<double>(), rates, 1e-6 * rates) << algo;
    if (algo == "bsp") {
      EXPECT_EQ(fast, slow) << "synchronous workers stop together";
    } else if (algo.rfind("ssp", 0) == 0) {
      // While the slow worker trains, a fast one is at most s + 1 clocks ahead; once it retires (each worker's
      // budget runs from its own start) the others run free for what is left of theirs (CI once saw 36 vs 32).
      // So here the bound shows as far fewer steps than ASP's fast workers get (> 3x); the exact per-clock bound
      // is checked by Ssp.BoundHoldsUnderSlowWorkersAndStalenessZeroIsLockstep. The s + 1 clocks a fast worker may
      // lead by are added: on a loaded host the slow worker may finish a single step in the budget (a full run
      // beside a study saw 4 vs 1), and 4 is within the bound there.
      EXPECT_LT(fast, 2 * slow + 3) << "fast workers are held by the staleness bound\n" << summary.dump(2);
    } else {
      EXPECT_GT(fast, 3 * slow) << algo << ": the fast workers were not held by the slow one\n" << summary.dump(2);
    }
  }
}
