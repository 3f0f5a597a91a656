// A hung peer (issue 26, item 3): a worker stopped with SIGSTOP cannot end itself, and its open connections kept its
// peers waiting a whole --timeout, and the launcher waiting for it forever. Now the launcher kills a rank as soon as
// the leader declares it lost, and the run ends within seconds of its survivors. One algorithm per family: the
// parameter server (ASP), gossip (GoSGD, AD-PSGD) and synchronous (AR-SGD, which cannot continue: it ends with one
// line naming the stopped worker, and the launcher kills it with the others).
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <string>

namespace {

using distsgd::testing::read_file;
using distsgd::testing::run_shell;
using distsgd::testing::summary_of;
using distsgd::testing::TempDir;

// --timeout 30: the silence limit is 10 s (a third of it). The training stops on its own 6 s in (--time-budget).
constexpr int kTimeoutSeconds = 30;
const std::string kTask =
    " --workers 4 --dataset synthetic --synthetic-shape 1x28x28 --synthetic-classes 4 --synthetic-train-size 2048 "
    "--synthetic-test-size 256 --model lenet5 --batch-size 16 --threads 1 --seed 3 --lr 0.02 --momentum 0 "
    "--epochs 1000 --time-budget 6 --progress-seconds 1000 --no-checkpoint --timeout " +
    std::to_string(kTimeoutSeconds);

struct StoppedRun {
  std::string output;  // the launcher's, then "launcher=<status> ended=<yes|no> ..."
  bool ended = false;  // the launcher exited within kTimeoutSeconds of the stop
  int status = -1;
  double seconds_after_stop = 0;
  bool victim_alive = true;  // the stopped process still existed when the launcher had ended
};

// Starts the run under distsgd's launcher, stops worker 2 with SIGSTOP 1 s after the processes connected, and waits
// for the launcher at most kTimeoutSeconds (the run's own --timeout) after the stop; a launcher still running then
// is stopped (the test fails), so that the test itself never hangs.
StoppedRun train_and_stop_worker_2(const std::string& flags, const std::string& run) {
  const std::string log = run + ".log";
  const auto r =
      run_shell(std::string(DISTSGD_BINARY) + " train" + flags + " --out " + run + " > " + log + " 2>&1 & L=$!; " +
                "until [ -e " + run + "/config.json ] || ! kill -0 $L 2>/dev/null; do sleep 0.05; done; sleep 1; " +
                "K=$(pgrep -P $L -x distsgd-r2); kill -STOP $K; start=$(date +%s%N); ended=no; " + "for i in $(seq " +
                std::to_string(kTimeoutSeconds * 10) + "); do " +
                "kill -0 $L 2>/dev/null || { ended=yes; break; }; sleep 0.1; done; " +
                "seconds=$(( ($(date +%s%N) - start) / 1000000 )); " +
                "if [ $ended = no ]; then kill -CONT $K; kill -TERM $L; fi; wait $L; status=$?; " +
                "alive=no; if [ $ended = yes ] && kill -0 $K 2>/dev/null; then alive=yes; kill -9 $K; fi; " +
                "echo launcher=$status ended=$ended milliseconds=$seconds victim_alive=$alive");
  StoppedRun result;
  result.output = read_file(log) + r.output;
  auto field = [&](const std::string& name) {
    const auto at = r.output.find(name + "=");
    return at == std::string::npos ? std::string() : r.output.substr(at + name.size() + 1);
  };
  result.ended = field("ended").rfind("yes", 0) == 0;
  if (!field("launcher").empty()) result.status = std::stoi(field("launcher"));
  if (!field("milliseconds").empty()) result.seconds_after_stop = std::stod(field("milliseconds")) / 1000;
  result.victim_alive = field("victim_alive").rfind("no", 0) != 0;
  return result;
}

// The parameter-server and gossip families go on without the stopped worker: it is declared lost (10 s of silence),
// the launcher kills it, and the run ends as it would have, with summary.json naming the lost worker. Before, the
// launcher never ended (the test's bound stopped it).
TEST(HungWorker, AStoppedWorkerIsKilledAndTheRunEndsWithoutIt) {
  TempDir dir;
  for (const std::string algo : {"asp --servers 1", "gosgd --gossip-prob 0.5", "adpsgd"}) {
    const std::string run = dir / "stopped";
    std::filesystem::remove_all(run);
    const auto r = train_and_stop_worker_2(" --algo " + algo + " --on-worker-loss continue" + kTask, run);
    ASSERT_TRUE(r.ended) << algo << "\n" << r.output;
    EXPECT_EQ(r.status, 0) << algo << "\n" << r.output;
    EXPECT_FALSE(r.victim_alive) << algo << "\n" << r.output;
    EXPECT_NE(r.output.find("worker 2 (rank 2) was declared lost, so the launcher killed it"), std::string::npos)
        << algo << "\n"
        << r.output;
    const auto summary = summary_of(run);
    ASSERT_EQ(summary["lost_workers"].size(), 1u) << algo << "\n" << summary.dump(1);
    EXPECT_EQ(summary["lost_workers"][0]["worker"], 2) << algo;
    EXPECT_EQ(summary["stop_reason"], "time_budget") << algo << "\n" << summary.dump(1);
    std::cout << algo << ": the run ended " << r.seconds_after_stop << " s after worker 2 was stopped" << std::endl;
  }
}

// A synchronous algorithm cannot go on without a worker (--on-worker-loss continue is refused: WorkerLoss tests), so
// the stopped worker ends the run with one line naming it, and the launcher kills it with the others.
TEST(HungWorker, AStoppedWorkerOfASynchronousRunEndsItNamingTheWorker) {
  TempDir dir;
  const auto r = train_and_stop_worker_2(" --algo arsgd" + kTask, dir / "stopped");
  ASSERT_TRUE(r.ended) << r.output;
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_FALSE(r.victim_alive) << r.output;
  EXPECT_NE(r.output.find("worker 2 (rank 2) was lost: no sign of life for"), std::string::npos) << r.output;
  std::cout << "arsgd: the run ended " << r.seconds_after_stop << " s after worker 2 was stopped" << std::endl;
}

}  // namespace
