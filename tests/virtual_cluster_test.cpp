// The virtual cluster (spec/virtual-cluster.md): the scheduler releases actors one at a time in virtual-time order
// and finds deadlocks; the in-process transport delivers messages and collectives; `distsgd train --virtual` runs
// the algorithms' own code, ends where the real multi-process run ends for the synchronous ones, is the same for a
// seed on every run, and reports the staleness the asynchronous ones have at scale.
#include "distsgd/core/runtime.hpp"
#include "distsgd/sim/engine/actor_scheduler.hpp"
#include "distsgd/sim/engine/event_queue.hpp"
#include "distsgd/vcluster/virtual_communicator.hpp"
#include "test_util.hpp"
#include "trained_parameters.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sched.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using distsgd::testing::error_of_call;
using distsgd::testing::parameters_of;
using distsgd::testing::run_distsgd;
using distsgd::testing::summary_of;
using distsgd::testing::TempDir;

namespace {

using distsgd::sim::ActorScheduler;
using distsgd::sim::EventQueue;

TEST(ActorScheduler, ReleasesActorsInVirtualTimeOrder) {
  EventQueue queue;
  ActorScheduler scheduler(queue);
  std::vector<std::string> order;
  for (int a = 0; a < 3; ++a) {
    scheduler.start("actor " + std::to_string(a), [&, a] {
      for (int k = 0; k < 3; ++k) {
        distsgd::runtime::sleep_for(1.0 + a * 0.4);  // actor a wakes at (k+1)(1 + 0.4a)
        order.push_back(std::to_string(a) + "@" + std::to_string(std::llround(scheduler.now() * 10)));
      }
    });
  }
  scheduler.run();
  // Times in tenths of a second: 10, 14, 18, 20, 28, 30, 36, 42, 54.
  const std::vector<std::string> expected{"0@10", "1@14", "2@18", "0@20", "1@28", "0@30", "2@36", "1@42", "2@54"};
  EXPECT_EQ(order, expected);
  EXPECT_DOUBLE_EQ(scheduler.now(), 5.4);
}

// The actors and the driver take turns on one core (core/one_core.hpp: wall time only), and the caller's thread
// gets its own affinity back.
TEST(ActorScheduler, ActorsTakeTurnsOnOneCoreAndTheCallerKeepsItsAffinity) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  if (!distsgd::OneCore().enabled()) {
    GTEST_SKIP() << "one core allowed, DISTSGD_ONE_CORE=0, or no /proc/stat or sched_getcpu here: nothing to pin";
  }
  EventQueue queue;
  ActorScheduler scheduler(queue);
  std::vector<int> allowed_counts;
  std::set<int> cores;
  for (int a = 0; a < 3; ++a) {
    scheduler.start("actor " + std::to_string(a), [&] {
      for (int k = 0; k < 3; ++k) {
        distsgd::runtime::sleep_for(1.0);
        cpu_set_t mask;
        ASSERT_EQ(sched_getaffinity(0, sizeof(mask), &mask), 0);
        allowed_counts.push_back(CPU_COUNT(&mask));
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
          if (CPU_ISSET(cpu, &mask)) cores.insert(cpu);
        }
      }
    });
  }
  scheduler.run();
  EXPECT_EQ(allowed_counts, std::vector<int>(9, 1));
  EXPECT_EQ(cores.size(), 1u);  // a review moves the core after a second of wall time at the earliest
  cpu_set_t after;
  ASSERT_EQ(sched_getaffinity(0, sizeof(after), &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
}

// The rule that moves the actors' core: only where other work crowds the chosen core and another is clearly idler.
TEST(ActorScheduler, TheCoreMovesOnlyWhereOtherWorkCrowdsIt) {
  using distsgd::OneCore;
  EXPECT_EQ(OneCore::core_after_review({1.0, 0.0}, 0, 0.5), 1u);       // a second pinned run shares core 0
  EXPECT_EQ(OneCore::core_after_review({1.0, 0.0}, 0, 1.0), 0u);       // only this run is there
  EXPECT_EQ(OneCore::core_after_review({1.0, 1.0}, 0, 0.6), 0u);       // every core is busy
  EXPECT_EQ(OneCore::core_after_review({0.9, 0.5, 0.1}, 0, 0.4), 2u);  // the idlest
  EXPECT_EQ(OneCore::core_after_review({0.6, 0.5}, 0, 0.0), 0u);       // too little to gain
  EXPECT_EQ(OneCore::core_after_review({0.2, 1.0}, 1, 0.2), 0u);
}

TEST(ActorScheduler, ConditionWakesWaitersAtTheNotifiersTimeAndDeadlinesAtTheirOwn) {
  EventQueue queue;
  ActorScheduler scheduler(queue);
  std::mutex mutex;
  distsgd::runtime::Condition ready;
  bool flag = false;
  double woken_at = -1, timed_out_at = -1;
  bool timed_wait_result = true;
  scheduler.start("waiter", [&] {
    std::unique_lock<std::mutex> lock(mutex);
    ready.wait(lock, [&] { return flag; });
    woken_at = scheduler.now();
  });
  scheduler.start("timed waiter", [&] {
    std::unique_lock<std::mutex> lock(mutex);
    timed_wait_result = ready.wait_for(lock, std::chrono::milliseconds(500), [&] { return false; });
    timed_out_at = scheduler.now();
  });
  scheduler.start("notifier", [&] {
    distsgd::runtime::sleep_for(2.0);
    std::lock_guard<std::mutex> lock(mutex);
    flag = true;
    ready.notify_all();
  });
  scheduler.run();
  EXPECT_DOUBLE_EQ(woken_at, 2.0);
  EXPECT_FALSE(timed_wait_result);
  EXPECT_DOUBLE_EQ(timed_out_at, 0.5);
}

// A wait a notify ended leaves its deadline in the queue; the run ends with its last actor, not at that deadline
// (AD-PSGD's virtual runs ended at 10^6 s, the deadline of an exchange that had long been answered).
TEST(ActorScheduler, TheRunEndsWhenItsLastActorEndsNotAtAStaleDeadline) {
  EventQueue queue;
  ActorScheduler scheduler(queue);
  std::mutex mutex;
  distsgd::runtime::Condition answered;
  bool flag = false;
  bool answered_in_time = false;
  scheduler.start("asker", [&] {
    std::unique_lock<std::mutex> lock(mutex);
    answered_in_time = answered.wait_for(lock, std::chrono::seconds(1000000), [&] { return flag; });
  });
  scheduler.start("answerer", [&] {
    distsgd::runtime::sleep_for(3.0);
    std::lock_guard<std::mutex> lock(mutex);
    flag = true;
    answered.notify_all();
  });
  scheduler.run();
  EXPECT_TRUE(answered_in_time);
  EXPECT_DOUBLE_EQ(queue.now(), 3.0);
}

TEST(ActorScheduler, ThreadsStartedByAnActorAreActorsAndJoinInVirtualTime) {
  EventQueue queue;
  ActorScheduler scheduler(queue);
  double joined_at = -1;
  scheduler.start("parent", [&] {
    distsgd::runtime::Thread child("child", [] { distsgd::runtime::sleep_for(3.0); });
    child.join();
    joined_at = scheduler.now();
  });
  scheduler.run();
  EXPECT_DOUBLE_EQ(joined_at, 3.0);
  EXPECT_EQ(scheduler.actors_started(), 2);
}

TEST(ActorScheduler, ADeadlockIsReportedNamingWhoWaitsForWhat) {
  EventQueue queue;
  auto scheduler = std::make_unique<ActorScheduler>(queue);
  std::mutex mutex;
  distsgd::runtime::Condition never;
  scheduler->start("worker 3", [&] {
    std::unique_lock<std::mutex> lock(mutex);
    never.wait(
        lock, [] { return false; }, "a message from worker 7");
  });
  const std::string error = error_of_call([&] { scheduler->run(); });
  EXPECT_NE(error.find("deadlock"), std::string::npos) << error;
  EXPECT_NE(error.find("worker 3 waits for a message from worker 7"), std::string::npos) << error;
  scheduler.release();  // its actor is blocked for ever (as after any failed run): left to the process's end
}

TEST(ActorScheduler, AnActorsErrorEndsTheRunWithItsName) {
  EventQueue queue;
  auto scheduler = std::make_unique<ActorScheduler>(queue);
  scheduler->start("server 0", [] { throw distsgd::Error("shard out of range"); });
  EXPECT_EQ(error_of_call([&] { scheduler->run(); }), "server 0: shard out of range");
}

// Ranks as threads over the in-process transport, without a network: messages arrive in order, collectives sum
// in rank order on every worker.
TEST(VirtualTransport, PointToPointAndCollectivesOverTheIdealFabric) {
  EventQueue queue;
  ActorScheduler scheduler(queue);
  auto fabric = distsgd::vcluster::Fabric::ideal(scheduler, 3, 1);
  std::vector<at::Tensor> sums(3), gathered(3);
  at::Tensor received_first, received_second;
  for (int64_t rank = 0; rank < 4; ++rank) {
    scheduler.start("rank " + std::to_string(rank), [&, rank] {
      distsgd::vcluster::VirtualCommunicator comm(*fabric, rank);
      if (rank == 3) {  // the server: two messages from worker 0, in order
        received_first = torch::zeros({2});
        received_second = torch::zeros({2});
        auto a = comm.receive(received_first, 0, 7);
        auto b = comm.receive(received_second, 0, 7);
        b.wait();
        a.wait();
        comm.store_set("server", "done");
        return;
      }
      if (rank == 0) {
        comm.send(torch::tensor({1.0f, 2.0f}), 3, 7).wait();
        comm.send(torch::tensor({3.0f, 4.0f}), 3, 7).wait();
      }
      auto t = torch::full({4}, static_cast<float>(rank + 1));
      comm.allreduce_sum(t).wait();
      sums[static_cast<size_t>(rank)] = t;
      auto everyone = torch::zeros({3});
      std::vector<at::Tensor> outputs{everyone.narrow(0, 0, 1), everyone.narrow(0, 1, 1), everyone.narrow(0, 2, 1)};
      comm.allgather(outputs, torch::full({1}, static_cast<float>(10 * rank))).wait();
      gathered[static_cast<size_t>(rank)] = everyone;
      EXPECT_EQ(comm.store_get("server"), "done");
    });
  }
  scheduler.run();
  EXPECT_TRUE(received_first.equal(torch::tensor({1.0f, 2.0f})));
  EXPECT_TRUE(received_second.equal(torch::tensor({3.0f, 4.0f})));
  for (int w = 0; w < 3; ++w) {
    EXPECT_TRUE(sums[static_cast<size_t>(w)].equal(torch::full({4}, 6.0f))) << w;
    EXPECT_TRUE(gathered[static_cast<size_t>(w)].equal(torch::tensor({0.0f, 10.0f, 20.0f}))) << w;
  }
}

// Gloo's rendezvous: a send's data moves only once the receiver has posted a matching receive, so a sender that
// runs ahead of its receiver waits for it (before, the message waited at the receiver and the sender went on, and an
// ALADDIN server that fell behind saw gradients hundreds of updates old). Worker 1 posts its receive 5 s in; worker
// 0's send completes then, not at once, and its second send waits for the second receive (at 7 s).
TEST(VirtualTransport, ASendWaitsForTheReceiversReceiveAsOverGloo) {
  EventQueue queue;
  ActorScheduler scheduler(queue);
  auto fabric = distsgd::vcluster::Fabric::ideal(scheduler, 2, 0);
  std::vector<double> sends_done;
  at::Tensor first = torch::zeros({2}), second = torch::zeros({2});
  scheduler.start("rank 0", [&] {
    distsgd::vcluster::VirtualCommunicator comm(*fabric, 0);
    comm.send(torch::tensor({1.0f, 2.0f}), 1, 7).wait();
    sends_done.push_back(scheduler.now());
    comm.send(torch::tensor({3.0f, 4.0f}), 1, 7).wait();
    sends_done.push_back(scheduler.now());
  });
  scheduler.start("rank 1", [&] {
    distsgd::vcluster::VirtualCommunicator comm(*fabric, 1);
    distsgd::runtime::sleep_for(5.0);
    comm.receive(first, 0, 7).wait();
    distsgd::runtime::sleep_for(2.0);
    comm.receive(second, 0, 7).wait();
  });
  scheduler.run();
  ASSERT_EQ(sends_done.size(), 2u);
  EXPECT_DOUBLE_EQ(sends_done[0], 5.0);
  EXPECT_DOUBLE_EQ(sends_done[1], 7.0);
  EXPECT_TRUE(first.equal(torch::tensor({1.0f, 2.0f})));
  EXPECT_TRUE(second.equal(torch::tensor({3.0f, 4.0f})));
}

TEST(VirtualTransport, AMessageOfTheWrongSizeFailsTheReceiveNamingBoth) {
  EventQueue queue;
  ActorScheduler scheduler(queue);
  auto fabric = distsgd::vcluster::Fabric::ideal(scheduler, 2, 0);
  std::string error;
  scheduler.start("rank 0", [&] {
    distsgd::vcluster::VirtualCommunicator comm(*fabric, 0);
    comm.send(torch::zeros({5}), 1, 1).wait();
  });
  scheduler.start("rank 1", [&] {
    distsgd::vcluster::VirtualCommunicator comm(*fabric, 1);
    error = error_of_call([&] { comm.receive(torch::zeros({4}), 0, 1).wait(); });
  });
  scheduler.run();
  EXPECT_NE(error.find("a message of 5 Float values for a buffer of 4 Float"), std::string::npos) << error;
}

// `distsgd train --virtual` end to end.
class VirtualTraining : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    auto r = run_distsgd(
        "profile --model lenet5 --device titan-v --batch-size 16 --input-shape 1x28x28 --classes 10 "
        "--out " +
        profile());
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string profile() { return *dir_ / "lenet5-titan-v.json"; }
  static TempDir* dir_;
};
TempDir* VirtualTraining::dir_ = nullptr;

const std::string kSmallRun =
    " --model lenet5 --dataset synthetic --synthetic-shape 1x28x28 --synthetic-train-size 3840 "
    "--synthetic-test-size 64 --max-steps 20 --epochs 1 --seed 5 --batch-size 16 --lr 0.05 --no-checkpoint "
    "--progress-seconds 1000";

// The same `train` flags as a real multi-process run (one thread per process) into dir/real and as a virtual one
// into dir/virtual; false (and a failure naming the output) when either fails.
bool real_and_virtual(const std::string& flags, const TempDir& dir, const std::string& profile) {
  auto real = run_distsgd(flags + " --threads 1 --out " + (dir / "real"));
  EXPECT_EQ(real.exit_code, 0) << real.output;
  auto virtual_run = run_distsgd(flags + " --virtual --profile " + profile + " --out " + (dir / "virtual"));
  EXPECT_EQ(virtual_run.exit_code, 0) << virtual_run.output;
  return real.exit_code == 0 && virtual_run.exit_code == 0;
}

TEST_F(VirtualTraining, BspEndsBitForBitWhereTheRealMultiProcessRunEnds) {
  for (const std::string sharding : {"memory", "layer"}) {
    TempDir dir;
    ASSERT_TRUE(real_and_virtual("train --algo bsp --workers 3 --servers 2 --sharding " + sharding + kSmallRun, dir,
                                 profile()));
    EXPECT_TRUE(parameters_of(dir / "real").equal(parameters_of(dir / "virtual"))) << sharding;
    const auto summary = summary_of(dir / "virtual");
    EXPECT_EQ(summary["virtual"], true);
    EXPECT_EQ(summary["steps"], 20);
    EXPECT_GT(summary["samples_per_second"].get<double>(), 0);
  }
}

// Gloo's ring sums each chunk starting at a different rank; the virtual allreduce sums in rank order. Measured
// here: 2.3e-8 (none, wfbp); multistep (alltoall, then a local sum in rank order) is bit-identical.
TEST_F(VirtualTraining, AllreduceEndsWithinRoundingOfTheRealRunAndMultistepBitForBit) {
  for (const std::string overlap : {"none", "wfbp", "multistep"}) {
    TempDir dir;
    ASSERT_TRUE(real_and_virtual("train --algo arsgd --workers 3 --overlap " + overlap + kSmallRun, dir, profile()));
    const auto a = parameters_of(dir / "real"), b = parameters_of(dir / "virtual");
    const double relative = ((a - b).norm() / a.norm()).item<double>();
    if (overlap == "multistep") {
      EXPECT_TRUE(a.equal(b));
    } else {
      EXPECT_LT(relative, 1e-6) << overlap;
    }
  }
}

// At 64 workers ASP's gradients are about W-1 updates old (each worker's pull is followed by the other 63 pushes
// before its own), and SSP's clocks never drift more than s apart: the servers' own counts in summary.json.
TEST_F(VirtualTraining, AspStalenessIsAboutTheWorkerCountAndSspKeepsItsBoundAt64Workers) {
  TempDir dir;
  const std::string run =
      " --workers 64 --servers 2 --model lenet5 --dataset synthetic --synthetic-shape 1x28x28 "
      "--synthetic-train-size 20480 --synthetic-test-size 64 --max-steps 12 --batch-size 16 "
      "--lr 0.001 --seed 3 --progress-seconds 1000 --virtual --profile " +
      profile();
  auto asp = run_distsgd("train --algo asp" + run + " --out " + (dir / "asp"));
  ASSERT_EQ(asp.exit_code, 0) << asp.output;
  const double staleness = summary_of(dir / "asp")["staleness_mean"].get<double>();
  // The first round's gradients are 0..63 updates old (all started together), the later ones about 63.
  EXPECT_GT(staleness, 0.8 * 63) << staleness;
  EXPECT_LT(staleness, 1.2 * 63) << staleness;
  auto ssp = run_distsgd("train --algo ssp --staleness 3" + run + " --out " + (dir / "ssp"));
  ASSERT_EQ(ssp.exit_code, 0) << ssp.output;
  const auto summary = summary_of(dir / "ssp");
  for (const auto& shard : summary["server_statistics"]) {
    EXPECT_LE(shard["ssp_max_push_gap"].get<int64_t>(), 3) << shard.dump();
  }
  EXPECT_GT(summary["staleness_mean"].get<double>(), 0);
}

// Found by the scaling-accuracy study: SSP (s=3) at 64 workers diverges early; its workers learn of it at different
// steps, one right after the mid-epoch evaluation, and every one must still meet the others in the last evaluation
// (that one skipped it, and its next collective met theirs: "launched collective 4 unlike the other workers").
TEST_F(VirtualTraining, IndependentWorkersStoppingOnADivergenceMeetInTheLastEvaluation) {
  TempDir dir;
  auto r = run_distsgd(
      "train --algo ssp --staleness 3 --workers 64 --servers 1 --momentum 0 --model lenet5 --dataset fashion-mnist "
      "--batch-size 16 --lr 0.05 --epochs 1 --seed 1 --no-checkpoint --progress-seconds 1000 --evals-per-epoch 4 "
      "--virtual --profile titan-v --cluster ipdps2021-56gb-ib --out " +
      (dir / "ssp"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("training diverged: ssp"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("unlike the other workers"), std::string::npos) << r.output;
  EXPECT_EQ(summary_of(dir / "ssp")["stop_reason"], "diverged");
}

TEST_F(VirtualTraining, TheSameSeedGivesTheSameRunBitForBit) {
  TempDir dir;
  const std::string flags = "train --algo asp --workers 4 --servers 1 --virtual --profile " + profile() + kSmallRun;
  auto first = run_distsgd(flags + " --out " + (dir / "a"));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  auto second = run_distsgd(flags + " --out " + (dir / "b"));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_TRUE(parameters_of(dir / "a").equal(parameters_of(dir / "b")));
  const auto a = summary_of(dir / "a"), b = summary_of(dir / "b");
  EXPECT_EQ(a["wall_seconds"], b["wall_seconds"]);
  EXPECT_EQ(a["virtual_events"], b["virtual_events"]);
  EXPECT_EQ(a["test_loss"], b["test_loss"]);
}

// A worker's optimizer pass takes the profile's update time (for lenet5 on a TITAN V more than its forward and
// backward: ten small tensors, four kernels each); BSP's workers leave the update to the servers.
TEST_F(VirtualTraining, WorkersSpendTheProfilesUpdateTimeEachStep) {
  const auto profile_json = nlohmann::json::parse(distsgd::testing::read_file(profile()));
  const double update = profile_json["update_seconds_per_byte"].get<double>() * 4 * 61706;  // lenet5's parameters
  TempDir dir;
  auto r = run_distsgd("train --algo arsgd --workers 2 --virtual --profile " + profile() + kSmallRun + " --out " +
                       (dir / "arsgd"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto summary = summary_of(dir / "arsgd");
  EXPECT_NEAR(summary["virtual_profile"]["update_seconds"].get<double>(), update, 1e-12);
  const double forward = summary["virtual_profile"]["forward_seconds"].get<double>();
  EXPECT_GE(summary["train_seconds"].get<double>(), 20 * (forward + update));
  r = run_distsgd("train --algo bsp --workers 2 --servers 1 --virtual --profile " + profile() + kSmallRun + " --out " +
                  (dir / "bsp"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(summary_of(dir / "bsp")["virtual_profile"]["update_seconds"].get<double>(), 0);
}

// The virtual cluster runs the algorithms' own protocols; the DES models them. At 16 workers on the IPDPS 10 GbE
// cluster they agree on throughput within 7% for all ten algorithms (bench/README, "The virtual cluster and the
// DES", and within 6.4% at 8); here, at 8 workers (half the cost), one of each kind within 10%: a server round
// (BSP), request and reply (ASP), unanswered pushes to a server that cannot keep up (SSP, ALADDIN with pi = 1: the
// server's inbound link is full, and both engines hold a push until the server's handler of its worker has posted
// its receive, so the gradients' staleness stays bounded and agrees within 10%), a peer exchange (AD-PSGD) and
// pushes along a graph (SGP). Both engines are deterministic, so the bounds cannot fail by chance. 120 steps: a run's
// figure counts its first steps, which independent workers (started at spread phases, sim/platform/start_phases.hpp)
// take less crowded; at 60 SSP's was 10% above the DES's steady state, at 120 4%.
TEST_F(VirtualTraining, ThroughputAgreesWithTheDiscreteEventSimulator) {
  TempDir dir;
  const std::string lenet5_28 = profile();  // the suite's TITAN V lenet5 profile, 1x28x28, batch 16
  distsgd::testing::CommandResult r;
  for (const std::string algorithm :
       {"bsp --servers 1", "asp --servers 1", "ssp --servers 1", "aladdin --servers 1 --pi 1", "adpsgd", "sgp"}) {
    const std::string name = algorithm.substr(0, algorithm.find(' '));
    const std::string cluster =
        " --algo " + algorithm + " --workers 8 --cluster ipdps2021-10gbe --profile " + lenet5_28;
    r = run_distsgd("train --virtual" + cluster +
                    " --model lenet5 --dataset synthetic --synthetic-shape 1x28x28 --synthetic-train-size 15360 "
                    "--synthetic-test-size 64 --batch-size 16 --lr 0.001 --momentum 0 --max-steps 120 --epochs 1 "
                    "--seed 1 --no-checkpoint --progress-seconds 1000 --out " +
                    (dir / name));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = run_distsgd("simulate --fidelity des" + cluster + " --out " + (dir / (name + ".json")));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto prediction =
        nlohmann::json::parse(distsgd::testing::read_file(dir / (name + ".json")))["predictions"][0];
    const double simulated = prediction["samples_per_second"].get<double>();
    const auto summary = summary_of(dir / name);
    const double virtual_rate = summary["samples_per_second"].get<double>();
    EXPECT_NEAR(virtual_rate / simulated, 1.0, 0.10) << name << ": virtual " << virtual_rate << ", DES " << simulated;
    const auto histogram = prediction["des"].value("staleness_histogram", nlohmann::json::object());
    if (!histogram.empty() && summary.value("staleness_mean", 0.0) > 0) {  // the parameter-server algorithms
      double updates = 0, total = 0;
      for (const auto& [age, count] : histogram.items()) {
        updates += count.get<double>();
        total += std::stod(age) * count.get<double>();
      }
      ASSERT_GT(updates, 0) << name;
      const double virtual_staleness = summary["staleness_mean"].get<double>();
      EXPECT_NEAR(total / updates / virtual_staleness, 1.0, 0.10)
          << name << ": staleness virtual " << virtual_staleness << ", DES " << total / updates;
    }
  }
}

// `train --virtual FLAGS` (lenet5 on 1x28x28 synthetic data, batch 16, `steps` steps) into dir/name and `simulate
// --fidelity des FLAGS` (steps - 5 iterations after 5 of warm-up), expected to agree within `tolerance` (relative):
// their samples per second, {virtual, DES}; {0, 0} and a failure naming the output where either command fails.
std::pair<double, double> virtual_and_simulated(const std::string& flags, int64_t steps, const TempDir& dir,
                                                const std::string& name, double tolerance) {
  auto r = run_distsgd("train --virtual" + flags +
                       " --model lenet5 --dataset synthetic --synthetic-shape 1x28x28 --synthetic-train-size 3840 "
                       "--synthetic-test-size 64 --batch-size 16 --max-steps " +
                       std::to_string(steps) + " --epochs 1 --seed 1 --no-checkpoint --progress-seconds 1000 --out " +
                       (dir / name));
  if (r.exit_code != 0) {
    ADD_FAILURE() << r.output;
    return {0, 0};
  }
  r = run_distsgd("simulate --fidelity des --iterations " + std::to_string(steps - 5) + " --warmup 5" + flags +
                  " --out " + (dir / (name + ".des.json")));
  if (r.exit_code != 0) {
    ADD_FAILURE() << r.output;
    return {0, 0};
  }
  const auto prediction = nlohmann::json::parse(distsgd::testing::read_file(dir / (name + ".des.json")));
  const double virtual_rate = summary_of(dir / name)["samples_per_second"].get<double>();
  const double simulated = prediction["predictions"][0]["samples_per_second"].get<double>();
  EXPECT_NEAR(virtual_rate / simulated, 1.0, tolerance)
      << name << ": virtual " << virtual_rate << ", DES " << simulated;
  return {virtual_rate, simulated};
}

// Computing and communicating at once (a calibrated cluster's interference_alpha_seconds): the virtual cluster charges
// it as the DES does, to each collective step a worker sends to another node while it computes. AR-SGD's wait-free
// buckets (small ones, and compute 50x the profile's, so most are reduced during backward) slow down; the two engines
// still agree within 10%.
TEST_F(VirtualTraining, InterferenceIsChargedByBothEnginesAlike) {
  TempDir dir;
  const std::string lenet5_28 = profile();
  std::ofstream(dir / "plain.json")
      << R"({"name": "plain", "worker_bytes_per_second": 1.25e9, "alpha_seconds": 5e-5, "compute_scale": 50})";
  std::ofstream(dir / "interfered.json") << R"({"name": "interfered", "worker_bytes_per_second": 1.25e9,
      "alpha_seconds": 5e-5, "compute_scale": 50, "interference_alpha_seconds": 2e-4})";
  std::map<std::string, double> virtual_rates;
  for (const std::string name : {"plain", "interfered"}) {
    const std::string flags =
        " --algo arsgd --overlap wfbp --bucket-mb 0.02 --first-bucket-mb 0.02 --workers 8 "
        "--cluster " +
        (dir / (name + ".json")) + " --profile " + lenet5_28;
    virtual_rates[name] = virtual_and_simulated(flags, 30, dir, name, 0.10).first;
  }
  EXPECT_LT(virtual_rates["interfered"], 0.95 * virtual_rates["plain"]);
}

// NICs that send one message at a time (egress_queue fifo, distsgd's emulated links): BSP's server answers its 4
// workers one after another in the virtual cluster as in the DES, the engines agree, and the run is faster than with
// the replies sharing the server's link (the first workers compute while the last wait).
TEST_F(VirtualTraining, FifoNicsAreQueuedByBothEnginesAlike) {
  TempDir dir;
  std::ofstream(dir / "fair.json") << R"({"name": "fair", "worker_bytes_per_second": 1.18e8, "alpha_seconds": 1e-4})";
  std::ofstream(dir / "fifo.json")
      << R"({"name": "fifo", "worker_bytes_per_second": 1.18e8, "alpha_seconds": 1e-4, "egress_queue": "fifo"})";
  std::map<std::string, double> virtual_rates, simulated_rates;
  for (const std::string name : {"fair", "fifo"}) {
    const std::string flags =
        " --algo bsp --servers 1 --workers 4 --cluster " + (dir / (name + ".json")) + " --profile " + profile();
    std::tie(virtual_rates[name], simulated_rates[name]) = virtual_and_simulated(flags, 40, dir, name, 0.05);
  }
  EXPECT_GT(virtual_rates["fifo"], 1.2 * virtual_rates["fair"]);
  EXPECT_GT(simulated_rates["fifo"], 1.2 * simulated_rates["fair"]);
}

// A shared host's hand-over per collective step (collective_handover): AR-SGD's own allreduce on the virtual cluster
// pays it on every ring step as the DES's does, so both engines agree with it and slow down alike.
TEST_F(VirtualTraining, CollectiveHandOverIsPaidByBothEnginesAlike) {
  TempDir dir;
  std::ofstream(dir / "plain.json") << R"({"name": "plain", "worker_bytes_per_second": 1.2e9, "alpha_seconds": 3e-5})";
  std::ofstream(dir / "handover.json")
      << R"({"name": "handover", "worker_bytes_per_second": 1.2e9, "alpha_seconds": 3e-5,
            "collective_handover": {"ranks": [2, 8], "seconds": [0, 3e-3]}})";
  std::map<std::string, double> virtual_rates, simulated_rates;
  for (const std::string name : {"plain", "handover"}) {
    const std::string flags =
        " --algo arsgd --workers 4 --cluster " + (dir / (name + ".json")) + " --profile " + profile();
    std::tie(virtual_rates[name], simulated_rates[name]) = virtual_and_simulated(flags, 40, dir, name, 0.05);
  }
  // 1 ms a step at 4 ranks (interpolated), 6 steps: 6 ms more an iteration than the plain cluster's.
  const double samples = 4 * 16;
  EXPECT_NEAR(samples / virtual_rates["handover"] - samples / virtual_rates["plain"], 6e-3, 1e-3);
  EXPECT_NEAR(samples / simulated_rates["handover"] - samples / simulated_rates["plain"], 6e-3, 1e-3);
}

// Servers on the workers' nodes (server_placement): the algorithm's own messages to a server of the worker's node stay
// off the network in the virtual cluster as in the DES, and its other messages share the nodes' links with the
// servers'. Both engines agree, and the placement is faster than servers behind (slow) links of their own.
TEST_F(VirtualTraining, ServersOnTheWorkersNodesAreRoutedByBothEnginesAlike) {
  TempDir dir;
  const std::string lenet5_28 = profile();
  for (const std::string placement : {"own_links", "worker_nodes"}) {
    std::ofstream(dir / (placement + ".json"))
        << R"({"name": "p", "worker_bytes_per_second": 1.2e8, "alpha_seconds": 3e-5, "workers_per_node": 2,
              "intra_node_bytes_per_second": 1.2e10, "intra_node_alpha_seconds": 1e-5, "server_placement": ")"
        << placement << "\"}";
  }
  std::map<std::string, double> virtual_rates;
  for (const std::string placement : {"own_links", "worker_nodes"}) {
    const std::string flags =
        " --algo bsp --servers 2 --workers 4 --cluster " + (dir / (placement + ".json")) + " --profile " + lenet5_28;
    virtual_rates[placement] = virtual_and_simulated(flags, 30, dir, placement, 0.10).first;
  }
  EXPECT_GT(virtual_rates["worker_nodes"], 1.3 * virtual_rates["own_links"]);
}

// BSP's local aggregation pipelined with backward (--overlap wfbp: each bucket to the node's leader as backward
// produces it, summed and pushed by the leader's aggregating thread) in BSP's own code on the virtual cluster and in
// the DES: within 10% of each other with and without overlap, and faster with it in both. The virtual cluster's
// hosts are its nodes (two workers each here), as the DES groups them.
TEST_F(VirtualTraining, PipelinedLocalAggregationAgreesWithTheSimulation) {
  TempDir dir;
  // LeNet-5 on a device 500 times slower than a TITAN V: a backward pass long enough to hide the node's pushes.
  const std::string slow_lenet5 = dir / "p.json";
  auto profiled = run_distsgd(
      "profile --model lenet5 --device titan-v --efficiency 0.002 --batch-size 16 --input-shape 1x28x28 --classes 10 "
      "--out " +
      slow_lenet5);
  ASSERT_EQ(profiled.exit_code, 0) << profiled.output;
  std::ofstream(dir / "c.json")
      << R"({"name": "p", "worker_bytes_per_second": 1.2e8, "alpha_seconds": 3e-5, "workers_per_node": 2,
            "intra_node_bytes_per_second": 1.2e9, "intra_node_alpha_seconds": 1e-5, "server_placement": "worker_nodes"})";
  std::map<std::string, double> virtual_rates, simulated_rates;
  for (const std::string overlap : {"none", "wfbp"}) {
    const std::string flags = " --algo bsp --servers 2 --workers 4 --local-aggregation host --overlap " + overlap +
                              " --first-bucket-mb 0.004 --bucket-mb 0.05 --cluster " + (dir / "c.json") +
                              " --profile " + slow_lenet5;
    std::tie(virtual_rates[overlap], simulated_rates[overlap]) = virtual_and_simulated(flags, 30, dir, overlap, 0.10);
  }
  EXPECT_GT(virtual_rates["wfbp"], virtual_rates["none"]);
  EXPECT_GT(simulated_rates["wfbp"], simulated_rates["none"]);
}

// A busy host's late deliveries (a cluster's busy_delivery distribution, as commbench --busy-delivery measures it
// for one Gloo send and receive): while the ranks computing take every core (here a host of one core: any rank
// computing), the virtual cluster delays each collective step and each message the algorithms send by a draw from it,
// the DES each collective step and each exchange. A parameter server's exchange is a header and a payload: two Gloo
// messages, each delayed, the payload delivered after the header; the DES charges the later of two draws. Both
// engines then slow down alike against the plain cluster where messages arrive while someone computes (within 10%:
// ASP, whose workers compute while others exchange, 0.51 virtual and 0.53 DES), and not at all where they arrive
// while nobody does: AR-SGD's allreduce after backward (on this profile even small buckets' steps arrive after it
// ends), SGP's gossip between iterations.
TEST_F(VirtualTraining, BusyDeliveriesAreChargedByBothEnginesWhileRanksCompute) {
  TempDir dir;
  const std::string lenet5_28 = profile();
  std::ofstream(dir / "plain.json") << R"({"name": "plain", "worker_bytes_per_second": 1.25e9, "alpha_seconds": 5e-5})";
  std::ofstream(dir / "busy.json") << R"({"name": "busy", "worker_bytes_per_second": 1.25e9, "alpha_seconds": 5e-5,
      "busy_delivery": {"cores": 1, "quantiles": [0.5, 0.9], "seconds": [2e-4, 1e-3]}})";
  struct Case {
    std::string algorithm;
    bool delayed;
  };
  for (const auto& [algorithm, delayed] :
       std::vector<Case>{{"arsgd", false}, {"asp --servers 1", true}, {"sgp", false}}) {
    std::map<std::string, double> virtual_rates, des_rates;
    for (const std::string name : {"plain", "busy"}) {
      const std::string flags =
          " --algo " + algorithm + " --workers 4 --cluster " + (dir / (name + ".json")) + " --profile " + lenet5_28;
      const std::string out = dir / (name + "-run");
      auto r = run_distsgd("train --virtual" + flags +
                           " --model lenet5 --dataset synthetic --synthetic-shape 1x28x28 --synthetic-train-size 3840 "
                           "--synthetic-test-size 64 --batch-size 16 --max-steps 60 --epochs 1 --seed 1 "
                           "--no-checkpoint --progress-seconds 1000 --overwrite --out " +
                           out);
      ASSERT_EQ(r.exit_code, 0) << algorithm << "\n" << r.output;
      r = run_distsgd("simulate --fidelity des --iterations 50 --warmup 10" + flags + " --out " +
                      (dir / (name + ".des.json")));
      ASSERT_EQ(r.exit_code, 0) << algorithm << "\n" << r.output;
      des_rates[name] = nlohmann::json::parse(distsgd::testing::read_file(
          dir / (name + ".des.json")))["predictions"][0]["samples_per_second"]
                            .get<double>();
      virtual_rates[name] = summary_of(out)["samples_per_second"].get<double>();
      std::cout << algorithm << ", " << name << ": virtual " << virtual_rates[name] << ", DES " << des_rates[name]
                << std::endl;
    }
    EXPECT_NEAR(virtual_rates["plain"] / des_rates["plain"], 1.0, 0.10) << algorithm;
    const double virtual_slowdown = virtual_rates["busy"] / virtual_rates["plain"];
    const double des_slowdown = des_rates["busy"] / des_rates["plain"];
    EXPECT_NEAR(virtual_slowdown / des_slowdown, 1.0, 0.10)
        << algorithm << ": busy/plain, virtual " << virtual_slowdown << ", DES " << des_slowdown;
    if (delayed) {
      EXPECT_LT(virtual_slowdown, 0.95) << algorithm;
      EXPECT_LT(des_slowdown, 0.95) << algorithm;
    } else {
      EXPECT_DOUBLE_EQ(virtual_slowdown, 1.0) << algorithm;
      EXPECT_DOUBLE_EQ(des_slowdown, 1.0) << algorithm;
    }
  }
}

// A server's processing of what workers send it (a calibrated cluster's server_seconds_per_request and _per_byte) is
// charged by both engines by one rule: per message and per byte received, on the server's compute. Here it bounds
// the run: every gradient costs the server at least one request and its bytes, so the servers take at most
// 1 / (request + bytes x per_byte) gradients a second, whatever the workers do (without the charge, 8 workers on
// this profile go more than 10x faster), and the virtual run and the DES agree within 10%.
TEST_F(VirtualTraining, AServersProcessingCostIsChargedByBothEnginesAlike) {
  TempDir dir;
  const std::string cluster_file = dir / "busy-server.json";
  std::ofstream(cluster_file) << R"({"name": "busy-server", "worker_bytes_per_second": 1.25e9, "alpha_seconds": 5e-5,
      "server_seconds_per_request": 1e-3, "server_seconds_per_byte": 2e-9})";
  const std::string lenet5_28 = profile();  // the suite's TITAN V lenet5 profile, 1x28x28, batch 16
  distsgd::testing::CommandResult r;
  const double gradient_bytes = 4.0 * 61706;  // lenet5's parameters
  const double most_gradients_per_second = 1.0 / (1e-3 + 2e-9 * gradient_bytes);
  // SSP's pushes get no reply, so when its workers end, up to 4 pushes each still wait at the server: a virtual run
  // ends ahead of the DES's steady state by their share of it (about 6% at 240 steps, 13% at 60).
  for (const auto& [algorithm, steps] : std::vector<std::pair<std::string, int64_t>>{{"asp", 60}, {"ssp", 240}}) {
    const std::string cluster =
        " --algo " + algorithm + " --servers 1 --workers 8 --cluster " + cluster_file + " --profile " + lenet5_28;
    r = run_distsgd("train --virtual" + cluster +
                    " --model lenet5 --dataset synthetic --synthetic-shape 1x28x28 --synthetic-train-size 30720 "
                    "--synthetic-test-size 64 --batch-size 16 --lr 0.001 --momentum 0 --epochs 1 --seed 1 "
                    "--no-checkpoint --progress-seconds 1000 --max-steps " +
                    std::to_string(steps) + " --out " + (dir / algorithm));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = run_distsgd("simulate --fidelity des" + cluster + " --out " + (dir / (algorithm + ".json")));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const double simulated = nlohmann::json::parse(distsgd::testing::read_file(
        dir / (algorithm + ".json")))["predictions"][0]["samples_per_second"]
                                 .get<double>();
    const double virtual_rate = summary_of(dir / algorithm)["samples_per_second"].get<double>();
    EXPECT_LE(virtual_rate, 1.02 * 16 * most_gradients_per_second) << algorithm;
    EXPECT_LE(simulated, 1.02 * 16 * most_gradients_per_second) << algorithm;
    EXPECT_NEAR(virtual_rate / simulated, 1.0, 0.10)
        << algorithm << ": virtual " << virtual_rate << ", DES " << simulated;
  }
}

// --evals-per-epoch 4: four evaluations per epoch at evenly spaced steps, each at the virtual time it began (an
// evaluation takes none), so the curve's times are those of training alone.
// On a calibrated cluster file (calibrate --noise keeps the clusters that fit its points as well) the virtual run's
// time is its best fit's, and summary.json's virtual_range scales it by the DES's speed on each of the others
// relative to the best fit: the same range simulate gives for the configuration, and a slower cluster's own DES
// figure at its low end.
TEST_F(VirtualTraining, OnACalibratedClusterTheRunReportsTheRangeOfItsClusters) {
  TempDir dir;
  const std::string best = R"({"name": "calibrated", "worker_bytes_per_second": 1.25e8, "alpha_seconds": 5e-5})";
  const std::string slower =
      R"({"name": "calibrated", "worker_bytes_per_second": 0.6e8, "alpha_seconds": 5e-5, "compute_scale": 1.5})";
  const std::string faster = R"({"name": "calibrated", "worker_bytes_per_second": 2.5e8, "alpha_seconds": 5e-5})";
  auto file = nlohmann::json::parse(best);
  file["calibration"] = {{"noise", 0.02},
                         {"consistent_clusters", {nlohmann::json::parse(slower), nlohmann::json::parse(faster)}}};
  std::ofstream(dir / "calibrated.json") << file.dump();
  std::ofstream(dir / "slower.json") << slower;
  const std::string flags = " --algo arsgd --overlap none --workers 4 --profile " + profile();
  auto r = run_distsgd("train --virtual" + flags + " --cluster " + (dir / "calibrated.json") + kSmallRun + " --out " +
                       (dir / "run"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("on the 3 clusters that fit the calibration's points"), std::string::npos) << r.output;
  const auto summary = summary_of(dir / "run");
  ASSERT_TRUE(summary.contains("virtual_range")) << summary.dump();
  const auto& range = summary["virtual_range"];
  EXPECT_EQ(range["clusters"], 3);
  const double rate = summary["samples_per_second"].get<double>();
  const double slowest = range["relative_speed"][0].get<double>(), fastest = range["relative_speed"][1].get<double>();
  EXPECT_LT(slowest, 0.9);
  EXPECT_GT(fastest, 1.0);
  EXPECT_NEAR(range["samples_per_second"][0].get<double>(), rate * slowest, 1e-6 * rate);
  EXPECT_NEAR(range["virtual_seconds"][1].get<double>(), summary["virtual_seconds"].get<double>() / slowest, 1e-6);
  // simulate's range for the same configuration: the same relative speeds.
  r = run_distsgd("simulate --fidelity des" + flags + " --cluster " + (dir / "calibrated.json") + " --out " +
                  (dir / "s.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto prediction = nlohmann::json::parse(distsgd::testing::read_file(dir / "s.json"))["predictions"][0];
  const double simulated = prediction["samples_per_second"].get<double>();
  EXPECT_NEAR(prediction["samples_per_second_range"][0].get<double>() / simulated, slowest, 0.02);
  EXPECT_NEAR(prediction["samples_per_second_range"][1].get<double>() / simulated, fastest, 0.02);
  // The slower cluster on its own, virtually: its rate is the range's low end.
  r = run_distsgd("train --virtual" + flags + " --cluster " + (dir / "slower.json") + kSmallRun + " --out " +
                  (dir / "slower"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(summary_of(dir / "slower").contains("virtual_range"));
  // A malformed cluster among them stops the run before it trains, naming it.
  file["calibration"]["consistent_clusters"][0]["worker_bytes_per_second"] = -1;
  std::ofstream(dir / "bad.json") << file.dump();
  r = run_distsgd("train --virtual" + flags + " --cluster " + (dir / "bad.json") + kSmallRun + " --out " +
                  (dir / "bad"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("calibration.consistent_clusters[0]: worker_bytes_per_second"), std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "bad/summary.json"));
  EXPECT_NEAR(
      summary_of(dir / "slower")["samples_per_second"].get<double>() / range["samples_per_second"][0].get<double>(), 1,
      0.1);
}

TEST_F(VirtualTraining, EvaluationsPerEpochGiveAFinerCurveInVirtualTime) {
  TempDir dir;
  auto r = run_distsgd("train --algo asp --workers 4 --servers 1 --virtual --profile " + profile() +
                       " --model lenet5 --dataset synthetic --synthetic-train-size 3840 --synthetic-test-size 64 "
                       "--epochs 2 --batch-size 16 --lr 0.02 --momentum 0 --evals-per-epoch 4 --no-checkpoint --out " +
                       (dir / "run"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<nlohmann::json> records;
  std::ifstream metrics(dir / "run/metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) records.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(records.size(), 8u);  // 60 steps per epoch: after 15, 30, 45 and at the end, twice
  std::vector<int64_t> steps;
  for (const auto& record : records) steps.push_back(record["step"]);
  EXPECT_EQ(steps, (std::vector<int64_t>{15, 30, 45, 60, 75, 90, 105, 120}));
  for (size_t i = 1; i < records.size(); ++i) {
    EXPECT_GT(records[i]["wall_seconds"].get<double>(), records[i - 1]["wall_seconds"].get<double>());
  }
  // Equal steps take equal virtual time on a homogeneous cluster: the evaluations (among them the end of epoch 1's)
  // took none. From the second quarter on: worker 0's first steps are less crowded, the others starting after it
  // (sim/platform/start_phases.hpp).
  const double quarter = records[2]["wall_seconds"].get<double>() - records[1]["wall_seconds"].get<double>();
  EXPECT_NEAR(records[6]["wall_seconds"].get<double>() - records[2]["wall_seconds"].get<double>(), 4 * quarter,
              0.05 * quarter);
}

// --trace: the timeline with the span names of a real run, one row per rank, on the virtual clock (microseconds from
// the run's start, none after its end).
TEST_F(VirtualTraining, TraceIsTheVirtualTimeline) {
  TempDir dir;
  auto r = run_distsgd("train --algo asp --workers 4 --servers 1 --trace --momentum 0 --virtual --profile " +
                       profile() + kSmallRun + " --out " + (dir / "run"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto trace = nlohmann::json::parse(distsgd::testing::read_file(dir / "run/trace.json"));
  const auto summary = summary_of(dir / "run");
  const double end_us = summary["virtual_seconds"].get<double>() * 1e6;
  EXPECT_GE(summary["virtual_seconds"].get<double>(), summary["wall_seconds"].get<double>());
  std::set<int64_t> ranks_with_forward;
  int64_t spans = 0;
  for (const auto& event : trace["traceEvents"]) {
    if (event.value("ph", "") != "X") continue;
    ++spans;
    EXPECT_GE(event["ts"].get<double>(), 0);
    EXPECT_LE(event["ts"].get<double>() + event["dur"].get<double>(), end_us + 1);
    if (event["name"] == "forward") ranks_with_forward.insert(event["pid"].get<int64_t>());
  }
  EXPECT_GT(spans, 4 * 20);
  EXPECT_EQ(ranks_with_forward.size(), 4u);
}

TEST_F(VirtualTraining, BadInputIsRefusedWithOneLineBeforeAnythingStarts) {
  TempDir dir;
  const std::string base = "train --algo asp --workers 4 --servers 1" + kSmallRun + " --out " + (dir / "x");
  auto no_profile = run_distsgd(base + " --virtual");
  EXPECT_EQ(no_profile.exit_code, 1);
  EXPECT_NE(no_profile.output.find("--virtual needs --profile"), std::string::npos) << no_profile.output;
  auto missing = run_distsgd(base + " --virtual --profile " + (dir / "absent.json"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("absent.json"), std::string::npos) << missing.output;
  auto bad_cluster = run_distsgd(base + " --virtual --profile " + profile() + " --cluster nowhere");
  EXPECT_EQ(bad_cluster.exit_code, 1);
  EXPECT_NE(bad_cluster.output.find("'nowhere' is neither a preset"), std::string::npos) << bad_cluster.output;
  auto net = run_distsgd(base + " --virtual --profile " + profile() + " --net 1gbit");
  EXPECT_EQ(net.exit_code, 1);
  EXPECT_NE(net.output.find("describe it with --cluster"), std::string::npos) << net.output;
  auto timeout = run_distsgd(base + " --virtual --profile " + profile() + " --timeout 30");
  EXPECT_EQ(timeout.exit_code, 1);
  EXPECT_NE(timeout.output.find("--timeout does not apply"), std::string::npos) << timeout.output;
  // A profile of other inputs: its times are not this run's.
  auto r = run_distsgd("profile --model lenet5 --device titan-v --batch-size 16 --out " + (dir / "224.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto other_inputs = run_distsgd(base + " --virtual --profile " + (dir / "224.json"));
  EXPECT_EQ(other_inputs.exit_code, 1);
  EXPECT_NE(other_inputs.output.find("was made for 3x224x224 inputs, this run's are 1x28x28"), std::string::npos)
      << other_inputs.output;
  // The same layers of other sizes: an analytical profile of 1,000 classes for a 10-class dataset.
  r = run_distsgd("profile --model lenet5 --device titan-v --batch-size 16 --input-shape 1x28x28 --out " +
                  (dir / "1000.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto other_classes = run_distsgd(base + " --virtual --profile " + (dir / "1000.json"));
  EXPECT_EQ(other_classes.exit_code, 1);
  EXPECT_NE(other_classes.output.find("has 145856 parameters, but this run's lenet5 has 61706"), std::string::npos)
      << other_classes.output;
  auto huge = run_distsgd("train --algo asp --workers 200000 --servers 1" + kSmallRun + " --virtual --profile " +
                          profile() + " --out " + (dir / "y"));
  EXPECT_EQ(huge.exit_code, 1);
  EXPECT_NE(huge.output.find("available"), std::string::npos) << huge.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "y"));
  EXPECT_FALSE(std::filesystem::exists(dir / "x"));
}

}  // namespace
