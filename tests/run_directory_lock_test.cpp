// One run per run directory (train/run_lock.hpp): a second run into a directory a live run holds, by --overwrite
// or --resume, is refused with one line naming the holder and touches nothing; the lock goes with its holder.
#include "distsgd/train/run_lock.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

using distsgd::testing::error_of_call;
using distsgd::testing::read_file;
using distsgd::testing::run_distsgd;
using distsgd::testing::run_shell;
using distsgd::testing::TempDir;
using distsgd::train::RunDirectoryLock;

TEST(RunDirectoryLock, ASecondHolderIsRefusedNamingTheFirstAndTheLockGoesWithItsHolder) {
  TempDir dir;
  const std::string run = dir / "run";
  {
    RunDirectoryLock held(run);
    const std::string error = error_of_call([&] { RunDirectoryLock second(run); });
    EXPECT_NE(error.find("run directory " + run + " is in use by another run (pid " + std::to_string(getpid())),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("on host"), std::string::npos) << error;
    EXPECT_FALSE(error_of_call([&] { RunDirectoryLock::refuse_if_held(run); }).empty());
  }
  EXPECT_TRUE(error_of_call([&] { RunDirectoryLock again(run); }).empty()) << "released with its holder";
  EXPECT_TRUE(error_of_call([&] { RunDirectoryLock::refuse_if_held(dir / "never-used"); }).empty());
  EXPECT_FALSE(std::filesystem::exists(dir / "never-used")) << "the launcher's check leaves no trace";
}

TEST(RunDirectoryLock, OverwriteOrResumeIntoALiveRunIsRefusedAndTheRunKeepsItsFiles) {
  TempDir dir;
  const std::string run = dir / "run";
  const std::string common =
      " --model mlp --mlp-width 16 --dataset synthetic --synthetic-train-size 512 --synthetic-test-size 64 "
      "--batch-size 16 --threads 1 --progress-seconds 1000 --out " +
      run;
  // The live run: 2 workers for 15 s of training, in the background.
  run_shell(std::string(DISTSGD_BINARY) + " train --algo arsgd --workers 2 --epochs 100000 --time-budget 15" + common +
            " > " + (dir / "live.log") + " 2>&1 &");
  // It holds the lock once its leader has written the holder's line.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (read_file(run + "/.lock").empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(read_file(run + "/.lock").empty()) << read_file(dir / "live.log");
  for (const std::string& second : {"train --algo sgd --overwrite --max-steps 2" + common,
                                    "train --algo arsgd --workers 2 --resume " + run + " --max-steps 2" + common}) {
    auto r = run_distsgd(second);
    EXPECT_EQ(r.exit_code, 1) << second << "\n" << r.output;
    EXPECT_NE(r.output.find("is in use by another run (pid "), std::string::npos) << r.output;
  }
  // The live run ends as it would have alone.
  while (!std::filesystem::exists(run + "/summary.json") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(std::filesystem::exists(run + "/summary.json")) << read_file(dir / "live.log");
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the launcher's last lines
  EXPECT_EQ(nlohmann::json::parse(read_file(run + "/config.json"))["algorithm"], "arsgd");
  EXPECT_EQ(nlohmann::json::parse(read_file(run + "/summary.json"))["stop_reason"], "time_budget");
  EXPECT_FALSE(read_file(run + "/metrics.jsonl").empty());
}
