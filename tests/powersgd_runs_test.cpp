// PowerSGD through the program: AR-SGD with --compress powersgd trains lenet5 on Fashion-MNIST at 2 and 4 workers
// and sends what the plan says (a 27th of dense AR-SGD's bytes per compressed step at rank 2), and bad input gets
// one clear line.
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

using distsgd::testing::run_distsgd;
using distsgd::testing::summary_of;
using distsgd::testing::TempDir;

namespace powersgd_runs_test {

const std::string kSmallRun =
    " --model lenet5 --dataset synthetic --synthetic-train-size 640 --synthetic-test-size 32 --epochs 1 "
    "--threads 1 --no-checkpoint --progress-seconds 1000 --seed 5 --max-steps 2";

// Bytes a worker sends in one ring allreduce of `floats` floats among `workers`.
double ring_bytes(int64_t workers, double floats) {
  return 2.0 * static_cast<double>(workers - 1) / static_cast<double>(workers) * 4.0 * floats;
}

// Lines that start with "distsgd: error:" (not a worker's forwarded ones).
int unprefixed_errors(const std::string& output) {
  return distsgd::testing::count_of("\n" + output, "\ndistsgd: error:");
}

}  // namespace powersgd_runs_test

// 100 steps of batch 32, the first 4 plain allreduces (--powersgd-start 4), then rank 2: lenet5's 61,706 floats go
// as 236 uncompressed + 472 (P) + 1,558 (Q) = 2,266, three allreduces per step.
TEST(PowerSgdRuns, TwoAndFourWorkersTrainLenet5WithAFractionOfTheBytes) {
  if (!distsgd::testing::have_fashion_mnist()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  TempDir dir;
  constexpr int64_t kSteps = 100, kStart = 4;
  for (const int64_t workers : {2, 4}) {
    const std::string out = dir / ("run" + std::to_string(workers));
    auto r = run_distsgd(
        "train --algo arsgd --compress powersgd --rank 2 --powersgd-start " + std::to_string(kStart) + " --workers " +
        std::to_string(workers) + " --model lenet5 --dataset fashion-mnist --batch-size 32 --lr 0.05 --max-steps " +
        std::to_string(kSteps) + " --threads 1 --seed 1 --no-checkpoint --progress-seconds 1000 --out " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto summary = summary_of(out);
    const auto where = std::to_string(workers) + " workers";
    EXPECT_EQ(summary["steps"].get<int64_t>(), kSteps) << where;
    // 6,400 or 12,800 samples, on the steep part of the curve, where the CPU's rounding moves the result (each run
    // is the same every time on one machine): plain AR-SGD reaches 0.73 at 2 workers, rank 2 0.64 (Intel) and
    // 0.599 (AMD EPYC) at 2, 0.70 and 0.715 at 4. Chance is 0.1; the bound stands 0.1 below the lowest seen.
    EXPECT_GE(summary["test_accuracy"].get<double>(), 0.5) << where << "\n" << summary.dump(2);
    EXPECT_EQ(summary["powersgd"]["floats_allreduced_per_step"].get<int64_t>(), 2266) << where;
    const double dense_step = powersgd_runs_test::ring_bytes(workers, 61706);
    const double compressed_step = powersgd_runs_test::ring_bytes(workers, 236) +
                                   powersgd_runs_test::ring_bytes(workers, 472) +
                                   powersgd_runs_test::ring_bytes(workers, 1558);
    const double bytes = summary["bytes_sent_per_worker"].get<double>();
    EXPECT_DOUBLE_EQ(bytes, kStart * dense_step + (kSteps - kStart) * compressed_step) << where;
    // Against plain AR-SGD's 100 dense allreduces: 2,266 / 61,706 = 3.7% per compressed step, 7.5% overall.
    EXPECT_LT(bytes / (kSteps * dense_step), 0.08) << where;
  }
}

TEST(PowerSgdRuns, BadInputGetsOneClearLine) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"--algo arsgd --workers 2 --compress powersgd --rank 0", "--rank must be at least 1 (got 0)"},
      {"--algo arsgd --workers 2 --compress powersgd --powersgd-start -1",
       "--powersgd-start must not be negative (got -1)"},
      {"--algo bsp --servers 1 --workers 2 --compress powersgd",
       "--compress powersgd sums low-rank factors by allreduce: bsp"},
      {"--algo easgd --servers 1 --workers 2 --compress powersgd", "--compress applies to"},
      {"--algo arsgd --workers 2 --rank 4", "--rank and --powersgd-start apply with --compress powersgd only"},
      {"--algo arsgd --workers 2 --compress powersgd --overlap wfbp", "--overlap wfbp does not apply"},
      {"--algo arsgd --workers 2 --compress powersgd --rank 64", "--rank 64 compresses no tensor of lenet5"},
      {"--algo diloco --workers 2 --compress powersgd --rank 64", "--rank 64 compresses no tensor of lenet5"},
  };
  for (const auto& [flags, message] : cases) {
    auto r = run_distsgd("train " + flags + powersgd_runs_test::kSmallRun);
    EXPECT_NE(r.exit_code, 0) << flags;
    EXPECT_NE(r.output.find(message), std::string::npos) << flags << "\n" << r.output;
    // One line of the program's own (a worker's error also appears under its "[worker k]" prefix, as every error
    // found once the model is built does).
    EXPECT_EQ(powersgd_runs_test::unprefixed_errors(r.output), 1) << flags << "\n" << r.output;
  }
}
