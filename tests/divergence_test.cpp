// Divergence: the rule (NaN, infinite, or above --divergence-factor x max(first loss, 1)), and runs that diverge
// stopping at once, with one line naming the algorithm, the worker, the step and the loss, a non-zero exit status
// and stop_reason "diverged" in summary.json: in one process, and in multi-process runs of each kind of stop
// (workers that meet in collectives, independent parameter-server workers, with and without a time budget), where
// nothing may hang.
#include "distsgd/train/divergence.hpp"
#include "distsgd/train/trainer.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <limits>
#include <sstream>

using distsgd::testing::read_file;
using distsgd::testing::run_distsgd;
using distsgd::testing::TempDir;
using namespace distsgd::train;

namespace {

const double kNaNLoss = std::numeric_limits<double>::quiet_NaN();
const double kInfinity = std::numeric_limits<double>::infinity();

// Small and fast; the learning rate makes the mlp blow up within a few steps.
const std::string kDivergingSmallRun =
    " --model mlp --mlp-width 32 --mlp-layers 1 --dataset synthetic --synthetic-train-size 2048 "
    "--synthetic-test-size 64 --batch-size 16 --threads 1 --no-checkpoint --progress-seconds 1000 --seed 3";

struct RunOutcome {
  int exit_code = -1;
  std::string output;
  double seconds = 0;
  nlohmann::json summary;
};

RunOutcome run(const TempDir& dir, const std::string& flags) {
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_distsgd("train" + kDivergingSmallRun + " " + flags + " --out " + (dir / "run"));
  RunOutcome o;
  o.exit_code = r.exit_code;
  o.output = r.output;
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string summary = read_file(dir / "run/summary.json");
  if (!summary.empty()) o.summary = nlohmann::json::parse(summary);
  return o;
}

// The lines of the output that report the divergence (the launcher's own, or worker 0's without one).
std::vector<std::string> divergence_lines(const std::string& output) {
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.find("training diverged") != std::string::npos) lines.push_back(line);
  }
  return lines;
}

void expect_diverged(const RunOutcome& o, const std::string& algorithm, double max_seconds) {
  EXPECT_NE(o.exit_code, 0) << o.output;
  EXPECT_LT(o.seconds, max_seconds) << o.output;
  const auto lines = divergence_lines(o.output);
  ASSERT_EQ(lines.size(), 1u) << o.output;
  const std::string& line = lines[0];
  EXPECT_EQ(line.rfind("distsgd: error: training diverged: " + algorithm + ", worker ", 0), 0u) << line;
  for (const char* part : {", step ", ": loss ", "README"}) EXPECT_NE(line.find(part), std::string::npos) << line;
  ASSERT_TRUE(o.summary.is_object()) << "no summary.json\n" << o.output;
  EXPECT_EQ(o.summary["stop_reason"], "diverged") << o.summary.dump(2);
  ASSERT_TRUE(o.summary.contains("divergence")) << o.summary.dump(2);
  const auto& d = o.summary["divergence"];
  EXPECT_NE(line.find("worker " + d["worker"].dump() + ", step " + d["step"].dump()), std::string::npos) << line;
  EXPECT_EQ(d["message"], line.substr(std::string("distsgd: error: ").size()));
  // The summary is the full report: every worker's row is in it.
  EXPECT_EQ(o.summary["per_worker"].size(), o.summary["workers"].get<size_t>());
}

}  // namespace

TEST(DivergenceRule, LimitIsTheFactorTimesTheFirstLossWithAFloorOfOne) {
  EXPECT_DOUBLE_EQ(divergence_limit(2.3, 100), 230);
  EXPECT_DOUBLE_EQ(divergence_limit(0.01, 100), 100);  // floor: max(first loss, 1)
  EXPECT_TRUE(std::isinf(divergence_limit(2.3, 0)));   // factor 0: only NaN and infinite losses
  EXPECT_TRUE(std::isinf(divergence_limit(kNaNLoss, 100)));
  EXPECT_FALSE(loss_diverged(229.9, 230));
  EXPECT_TRUE(loss_diverged(230.1, 230));
  EXPECT_TRUE(loss_diverged(kNaNLoss, kInfinity));
  EXPECT_TRUE(loss_diverged(kInfinity, kInfinity));
  EXPECT_FALSE(loss_diverged(1e30, kInfinity));
}

TEST(DivergenceRule, RecordSurvivesJsonWithNonFiniteLosses) {
  const Divergence d{2, 57, kNaNLoss, 230, 2.3};
  const auto j = divergence_json(d);
  EXPECT_EQ(j["loss"], "nan");
  const auto back = divergence_from_json(nlohmann::json::parse(j.dump()));
  EXPECT_EQ(back.worker, 2);
  EXPECT_EQ(back.step, 57);
  EXPECT_TRUE(std::isnan(back.loss));
  EXPECT_DOUBLE_EQ(back.limit, 230);
  const auto message = divergence_message("asp", Divergence{2, 57, 3.1e13, 230, 2.3});
  EXPECT_EQ(message.rfind("training diverged: asp, worker 2, step 57: loss 3.1e+13 exceeds 230 (--divergence-factor "
                          "100 x max(first loss 2.3, 1))",
                          0),
            0u)
      << message;
}

// In one process, through the library: the run stops right after the step whose loss ran away.
TEST(Divergence, SingleProcessStopsAtTheStepAfterTheLossRanAway) {
  TempDir dir;
  distsgd::TrainConfig c;
  c.model = "mlp";
  c.mlp_width = 32;
  c.mlp_hidden_layers = 1;
  c.dataset = "synthetic";
  c.synthetic_train_size = 2048;
  c.batch_size = 16;
  c.lr = 50;
  c.epochs = 5;
  c.threads = 1;
  c.progress_seconds = 1e9;
  c.checkpoint_each_epoch = false;
  c.out = dir / "run";
  int64_t steps = 0;
  TrainHooks hooks;
  hooks.on_step = [&](const StepRecord&) { ++steps; };
  const auto summary = run_training(c, hooks);
  EXPECT_EQ(summary["stop_reason"], "diverged");
  const auto d = divergence_from_json(summary["divergence"]);
  EXPECT_EQ(steps, d.step + 1) << "no step after the one that diverged";
  EXPECT_EQ(summary["steps"], d.step + 1);
  EXPECT_TRUE(!std::isfinite(d.loss) || d.loss > d.limit);
  EXPECT_LT(d.step, 50);
}

TEST(Divergence, SingleProcessRunExitsNonZeroWithOneLine) {
  TempDir dir;
  expect_diverged(run(dir, "--algo sgd --lr 50 --epochs 5"), "sgd", 30);
}

// The case, ASP with momentum 0.9 at the server, with a learning rate that blows this small mlp up on any
// schedule (at lr 0.1 whether it diverges depends on how stale the gradients get, so on the machine's load). Workers
// never meet in a collective while training; the others learn of the divergence through the store. Evaluated every
// epoch (no time budget).
TEST(Divergence, AspWithServerMomentumStopsEveryWorker) {
  TempDir dir;
  expect_diverged(run(dir,
                      "--algo asp --workers 4 --servers 1 --momentum 0.9 --momentum-at server --lr 2 "
                      "--epochs 20"),
                  "asp", 60);
}

// Independent workers under a time budget stop on their own and meet only at the end.
TEST(Divergence, AspUnderATimeBudgetStops) {
  TempDir dir;
  const auto o = run(dir,
                     "--algo asp --workers 4 --servers 1 --momentum 0.9 --momentum-at server --lr 2 --epochs 100 "
                     "--time-budget 600");
  expect_diverged(o, "asp", 60);
}

// Workers that meet in collectives stop at the same step, agreed on.
TEST(Divergence, AllreduceWorkersAgreeOnTheStop) {
  TempDir dir;
  const auto o = run(dir, "--algo arsgd --workers 3 --lr 50 --epochs 20");
  expect_diverged(o, "arsgd", 60);
  for (const auto& w : o.summary["per_worker"]) EXPECT_EQ(w["steps"], o.summary["steps"]) << o.summary.dump(2);
}

// Decentralized workers each diverge on their own model, at different steps; one slowed worker still stops.
TEST(Divergence, DecentralizedWorkersStopWithoutHanging) {
  TempDir dir;
  expect_diverged(run(dir, "--algo gosgd --gossip-prob 0.1 --workers 3 --lr 50 --epochs 20 --slowdown 2:3"), "gosgd",
                  60);
}

// One worker's loss runs away while the others' stay put: a low factor flags whichever worker's loss first exceeds
// 1.01 x its first one (at lr 0.01 the loss hardly moves and batches differ); EASGD's workers train their own
// models, two of them slowed down, and the others stop when they learn of it.
TEST(Divergence, OneWorkerStopsTheOthers) {
  TempDir dir;
  const auto o = run(dir,
                     "--algo easgd --tau 4 --workers 3 --servers 1 --lr 0.01 --epochs 20 --divergence-factor 1.01 "
                     "--slowdown 1:3 --slowdown 2:3");
  expect_diverged(o, "easgd", 60);
  EXPECT_LT(o.summary["epochs"].get<double>(), 2) << "stopped within the epoch after the divergence";
}

// SSP without a time budget: a worker that stops inside an epoch retires its clock before it waits for the others at
// the epoch-end agreement, or their pulls would wait for its clock and nobody would reach the agreement.
TEST(Divergence, SspWorkerStoppingInsideAnEpochHoldsNobody) {
  TempDir dir;
  const auto o = run(dir,
                     "--algo ssp --staleness 2 --workers 3 --servers 1 --lr 0.01 --epochs 20 --divergence-factor 1.01 "
                     "--slowdown 1:3 --slowdown 2:3 --timeout 30");
  expect_diverged(o, "ssp", 30);
}

// --divergence-factor 0 keeps only NaN and infinite losses as divergence.
TEST(Divergence, FactorZeroLetsLargeLossesThrough) {
  TempDir dir;
  const auto o = run(dir, "--algo sgd --lr 0.05 --max-steps 20 --divergence-factor 0");
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_EQ(o.summary["stop_reason"], "max_steps");
  EXPECT_FALSE(o.summary.contains("divergence"));
}
