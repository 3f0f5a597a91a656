// Lost processes (issue 14, item 2): with --on-worker-loss continue the parameter-server algorithms go on without a
// worker killed with kill -9, and summary.json says who was lost; synchronous algorithms refuse to continue; and
// under a launcher that watches nobody (plain RANK/WORLD_SIZE processes), a lost worker of a synchronous run or a
// lost server ends every other process within --timeout with one line naming it.
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <set>

namespace {

using distsgd::testing::read_file;
using distsgd::testing::run_distsgd;
using distsgd::testing::run_shell;
using distsgd::testing::summary_of;
using distsgd::testing::TempDir;

// A task that learns in a few seconds (4 classes of synthetic images).
const std::string kParameterServerTask =
    " --dataset synthetic --synthetic-shape 1x28x28 --synthetic-classes 4 --synthetic-train-size 2048 "
    "--synthetic-test-size 256 --model lenet5 --batch-size 16 --threads 1 --seed 3 --lr 0.02 --momentum 0 "
    "--progress-seconds 1000 --no-checkpoint";

// Starts `distsgd train FLAGS --out RUN` under distsgd's launcher, waits until the processes connected (config.json
// is written then) and `delay` seconds more, kills the child of rank `rank` with SIGKILL, and waits for the launcher.
// Returns its combined output with "launcher=<status>" appended.
std::string train_and_kill(const std::string& flags, const std::string& run, int rank, double delay) {
  const std::string log = run + ".log";
  const auto r = run_shell(std::string(DISTSGD_BINARY) + " train" + flags + " --out " + run + " > " + log +
                           " 2>&1 & L=$!; until [ -e " + run + "/config.json ] || ! kill -0 $L 2>/dev/null; " +
                           "do sleep 0.05; done; sleep " + std::to_string(delay) + "; K=$(pgrep -P $L -x distsgd-r" +
                           std::to_string(rank) + "); kill -9 $K; wait $L; echo launcher=$?");
  return read_file(log) + r.output;
}

std::set<int64_t> workers_reported(const nlohmann::json& summary) {
  std::set<int64_t> workers;
  for (const auto& w : summary["per_worker"]) workers.insert(w["worker"].get<int64_t>());
  return workers;
}

// Checks what a run that lost worker 2 of 4 reports.
void expect_went_on_without_worker_2(const std::string& output, const nlohmann::json& summary, double epochs) {
  EXPECT_NE(output.find("worker 2 (rank 2) was killed by signal 9 (Killed); the others go on without it"),
            std::string::npos)
      << output;
  EXPECT_NE(output.find("worker 2 (rank 2) was lost"), std::string::npos) << output;
  ASSERT_EQ(summary["lost_workers"].size(), 1u) << summary.dump(1);
  EXPECT_EQ(summary["lost_workers"][0]["worker"], 2);
  EXPECT_GT(summary["lost_workers"][0]["seconds"].get<double>(), 0);
  EXPECT_EQ(workers_reported(summary), (std::set<int64_t>{0, 1, 3}));
  EXPECT_EQ(summary["stop_reason"], "epochs");
  EXPECT_EQ(summary["epochs"], epochs);
}

// SSP (its default is continue) and ALADDIN: worker 2 killed early in the run. The server drops it, SSP's slowest
// clock stops counting it (or the others would wait for it forever) and its bound holds among the others, and the
// run ends its epochs with the three others.
TEST(WorkerLoss, ParameterServerRunsGoOnWithoutAKilledWorker) {
  TempDir dir;
  for (const std::string algo : {"ssp --staleness 2", "aladdin --pi 1"}) {
    const std::string run = dir / "killed";
    std::filesystem::remove_all(run);
    const std::string output = train_and_kill(
        " --algo " + algo + " --workers 4 --servers 1 --epochs 6 --timeout 12" + kParameterServerTask, run, 2, 0.3);
    ASSERT_NE(output.find("launcher=0"), std::string::npos) << algo << "\n" << output;
    const auto summary = summary_of(run);
    expect_went_on_without_worker_2(output, summary, 6.0);
    EXPECT_GE(summary["test_accuracy"].get<double>(), 0.9) << algo;
    if (algo.rfind("ssp", 0) == 0) {
      EXPECT_LE(summary["server_statistics"][0]["ssp_max_pull_gap"].get<int64_t>(), 2) << summary.dump(1);
    }
  }
}

// ASP on Fashion-MNIST: without worker 2 from its first second on, one epoch ends about as accurate as an
// uninterrupted one (the others take over its share of the steps). Both runs are asynchronous, so their accuracies
// move with the host's load (the gradients' staleness does): a third test job on this 2-core host once put the run
// without worker 2 at 0.822 against 0.857. So the bound is one-sided and wider than the noise of a quiet host.
TEST(WorkerLoss, AspWithoutAKilledWorkerLearnsAsWell) {
  if (!distsgd::testing::have_fashion_mnist()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  TempDir dir;
  const std::string flags =
      " --algo asp --momentum 0 --lr 0.05 --batch-size 16 --workers 4 --servers 1 --model lenet5 "
      "--dataset fashion-mnist --epochs 1 --seed 1 --threads 1 --no-checkpoint --progress-seconds 1000 --timeout 12";
  auto reference = run_distsgd("train" + flags + " --out " + (dir / "reference"));
  ASSERT_EQ(reference.exit_code, 0) << reference.output;
  const double uninterrupted = summary_of(dir / "reference")["test_accuracy"];
  const std::string output = train_and_kill(flags, dir / "killed", 2, 1.0);
  ASSERT_NE(output.find("launcher=0"), std::string::npos) << output;
  const auto summary = summary_of(dir / "killed");
  expect_went_on_without_worker_2(output, summary, 1.0);
  EXPECT_GE(summary["test_accuracy"].get<double>(), uninterrupted - 0.06);
  std::cout << "asp: accuracy " << summary["test_accuracy"] << " without worker 2, " << uninterrupted
            << " uninterrupted" << std::endl;
}

TEST(WorkerLoss, SynchronousAlgorithmsRefuseToContinue) {
  for (const std::string algo : {"bsp --servers 1", "arsgd"}) {
    auto r = run_distsgd("train --algo " + algo + " --workers 2 --on-worker-loss continue --timeout 12" +
                         kParameterServerTask);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("distsgd: error: --on-worker-loss continue: " + algo.substr(0, algo.find(' ')) +
                            " cannot go on without a worker"),
              std::string::npos)
        << r.output;
  }
  auto r = run_distsgd("train --algo asp --servers 1 --workers 2 --on-worker-loss sometimes" + kParameterServerTask);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--on-worker-loss"), std::string::npos) << r.output;
}

// Processes started as an env launcher (torchrun-style RANK/WORLD_SIZE) would: nobody watches them. Kills rank
// `victim` once the run trains, and returns the others' output and how long they took to end after the kill.
struct Ending {
  std::string output;
  double seconds_after_kill = 0;
  int failed = 0;  // processes (beside the victim) that exited non-zero
};

Ending kill_one_of_a_world(const std::string& flags, const std::string& run, int processes, int victim) {
  const int port = distsgd::testing::free_tcp_port();
  std::string command = "export MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) + "; ";
  for (int r = 0; r < processes; ++r) {
    command += "RANK=" + std::to_string(r) + " WORLD_SIZE=" + std::to_string(processes) + " " + DISTSGD_BINARY +
               " train" + flags + " --out " + run + " > " + run + "." + std::to_string(r) + ".log 2>&1 & pid" +
               std::to_string(r) + "=$!; ";
  }
  command += "until [ -e " + run + "/config.json ]; do sleep 0.05; done; sleep 1; kill -9 $pid" +
             std::to_string(victim) + "; start=$(date +%s%N); failed=0; ";
  for (int r = 0; r < processes; ++r) {
    if (r != victim) command += "wait $pid" + std::to_string(r) + " || failed=$((failed+1)); ";
  }
  command += "echo failed=$failed milliseconds=$(( ($(date +%s%N) - start) / 1000000 ))";
  const auto r = run_shell(command);
  Ending ending;
  for (int p = 0; p < processes; ++p) {
    if (p != victim) ending.output += read_file(run + "." + std::to_string(p) + ".log");
  }
  ending.output += r.output;
  const auto failed_at = r.output.find("failed="), milliseconds_at = r.output.find("milliseconds=");
  if (failed_at != std::string::npos) ending.failed = std::stoi(r.output.substr(failed_at + 7));
  if (milliseconds_at != std::string::npos) {
    ending.seconds_after_kill = std::stod(r.output.substr(milliseconds_at + 13)) / 1000;
  }
  return ending;
}

TEST(WorkerLoss, WithoutAWatchingLauncherALostWorkerOrServerEndsTheRunNamingIt) {
  TempDir dir;
  // A synchronous run: worker 2 of 3.
  auto ending = kill_one_of_a_world(" --algo arsgd --workers 3 --epochs 1000 --timeout 15" + kParameterServerTask,
                                    dir / "arsgd", 3, 2);
  EXPECT_EQ(ending.failed, 2) << ending.output;
  EXPECT_LT(ending.seconds_after_kill, 15) << ending.output;
  EXPECT_NE(ending.output.find("distsgd: error: worker 2 (rank 2) was lost: no sign of life for"), std::string::npos)
      << ending.output;

  // An asynchronous run that would go on without a worker cannot go on without its server.
  ending = kill_one_of_a_world(" --algo asp --workers 2 --servers 1 --epochs 1000 --timeout 15" + kParameterServerTask,
                               dir / "asp", 3, 2);
  EXPECT_EQ(ending.failed, 2) << ending.output;
  EXPECT_LT(ending.seconds_after_kill, 15) << ending.output;
  EXPECT_NE(ending.output.find("server 0 (rank 2) was lost"), std::string::npos) << ending.output;

  // BSP's local aggregation pipelined with backward: a member of the host dies while the leader's aggregating thread
  // waits for its buckets. The leader names it; nobody hangs.
  ending = kill_one_of_a_world(
      " --algo bsp --workers 3 --servers 1 --local-aggregation host --first-bucket-mb 0.004 "
      "--bucket-mb 0.05 --epochs 1000 --timeout 15" +
          kParameterServerTask,
      dir / "bsp", 4, 2);
  EXPECT_EQ(ending.failed, 3) << ending.output;
  EXPECT_LT(ending.seconds_after_kill, 15) << ending.output;
  EXPECT_NE(ending.output.find("distsgd: error: worker 2 (rank 2) was lost"), std::string::npos) << ending.output;
}

}  // namespace
