// Training runs through the library: checkpoint and resume, stopping rules, run files.
#include "distsgd/train/trainer.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/train/options.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using distsgd::TrainConfig;
using distsgd::testing::TempDir;
using distsgd::train::run_training;
using distsgd::train::StepRecord;
using distsgd::train::TrainHooks;

namespace {

TrainConfig small_config(const std::string& out) {
  TrainConfig c;
  c.model = "resnet20";  // has BatchNorm buffers, which a checkpoint must carry
  c.dataset = "synthetic";
  c.synthetic_shape = {3, 16, 16};
  c.synthetic_classes = 4;
  c.synthetic_train_size = 64;
  c.synthetic_test_size = 32;
  c.batch_size = 8;  // 8 steps per epoch
  c.lr = 0.05;
  c.epochs = 3;
  c.threads = 1;
  c.seed = 11;
  c.out = out;
  c.progress_seconds = 1e9;
  return c;
}

std::vector<double> losses_of(TrainConfig c) {
  std::vector<double> losses;
  TrainHooks hooks;
  hooks.on_step = [&](const StepRecord& r) {
    EXPECT_EQ(static_cast<size_t>(r.global_step), losses.size());
    losses.push_back(r.loss);
  };
  run_training(c, hooks);
  return losses;
}

}  // namespace

// A run stopped at a checkpoint and resumed reproduces the uninterrupted run's losses exactly, mid-epoch and
// across the epoch boundary (data order, parameters, momentum, BatchNorm statistics and RNG all restored).
TEST(Checkpoint, ResumedRunReproducesTheNextStepsExactly) {
  TempDir dir;
  auto reference_config = small_config(dir / "reference");
  reference_config.max_steps = 12;
  const auto reference = losses_of(reference_config);
  ASSERT_EQ(reference.size(), 12u);

  auto first = small_config(dir / "interrupted");
  first.max_steps = 5;
  first.checkpoint_every_steps = 5;
  first.checkpoint_each_epoch = false;
  const auto first_losses = losses_of(first);
  ASSERT_EQ(first_losses.size(), 5u);
  ASSERT_TRUE(std::filesystem::exists(dir / "interrupted/checkpoints/5/worker-0.pt"));
  ASSERT_TRUE(std::filesystem::exists(dir / "interrupted/checkpoints/5/manifest.json"));
  EXPECT_EQ(distsgd::testing::read_file(dir / "interrupted/checkpoints/latest"), "5\n");
  // No temporary file is left behind by the atomic writes.
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir / "interrupted/checkpoints")) {
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();
  }

  auto resumed = small_config("");
  resumed.resume = dir / "interrupted";
  resumed.max_steps = 12;
  std::vector<std::pair<int64_t, double>> after;
  TrainHooks hooks;
  hooks.on_step = [&](const StepRecord& r) { after.emplace_back(r.global_step, r.loss); };
  auto summary = run_training(resumed, hooks);
  ASSERT_EQ(after.size(), 7u);
  for (const auto& [step, loss] : after) {
    EXPECT_EQ(loss, reference[step]) << "step " << step;
  }
  EXPECT_EQ(summary["steps"], 12);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(first_losses[i], reference[i]);
}

TEST(Trainer, WritesRunFilesWithTheDocumentedFields) {
  TempDir dir;
  auto c = small_config(dir / "run");
  c.model = "lenet5";
  c.synthetic_shape = {1, 28, 28};
  c.epochs = 2;
  auto summary = run_training(c);
  for (const char* key : {"test_accuracy", "samples_per_second", "wall_seconds", "epochs", "model", "dataset",
                          "parameters", "algorithm", "workers", "servers"}) {
    EXPECT_TRUE(summary.contains(key)) << key;
  }
  EXPECT_EQ(summary["epochs"], 2.0);
  EXPECT_EQ(summary["steps"], 16);
  EXPECT_GT(summary["samples_per_second"].get<double>(), 0);
  auto on_disk = nlohmann::json::parse(distsgd::testing::read_file(dir / "run/summary.json"));
  EXPECT_EQ(on_disk, summary);
  auto config = nlohmann::json::parse(distsgd::testing::read_file(dir / "run/config.json"));
  EXPECT_EQ(config["model"], "lenet5");
  std::ifstream metrics(dir / "run/metrics.jsonl");
  std::string line;
  int records = 0;
  while (std::getline(metrics, line)) {
    auto r = nlohmann::json::parse(line);
    ++records;
    EXPECT_EQ(r["epoch"], static_cast<double>(records));
    for (const char* key : {"epoch", "wall_seconds", "samples", "train_loss", "test_loss", "test_accuracy"}) {
      EXPECT_TRUE(r.contains(key)) << key;
    }
    EXPECT_EQ(r["samples"], records * 64);
  }
  EXPECT_EQ(records, 2);
}

TEST(Trainer, MaxStepsAndTargetAccuracyStopTraining) {
  TempDir dir;
  auto c = small_config(dir / "steps");
  c.model = "mlp";
  c.mlp_width = 16;
  c.max_steps = 3;
  EXPECT_EQ(run_training(c)["stop_reason"], "max_steps");

  auto t = small_config(dir / "target");
  t.model = "mlp";
  t.mlp_width = 16;
  t.epochs = 50;
  t.target_accuracy = 1e-9;  // reached at the first evaluation
  auto summary = run_training(t);
  EXPECT_EQ(summary["stop_reason"], "target_accuracy");
  EXPECT_EQ(summary["epochs"], 1.0);
}

TEST(Trainer, RefusesToOverwriteARunUnlessAsked) {
  TempDir dir;
  auto c = small_config(dir / "run");
  c.model = "mlp";
  c.mlp_width = 8;
  c.max_steps = 1;
  run_training(c);
  EXPECT_THROW(run_training(c), distsgd::Error);
  c.overwrite = true;
  EXPECT_NO_THROW(run_training(c));
}

TEST(Trainer, RejectsInvalidConfigurations) {
  TempDir dir;
  auto c = small_config(dir / "bad");
  c.batch_size = 0;
  EXPECT_THROW(run_training(c), distsgd::Error);
  c = small_config(dir / "bad");
  try {
    distsgd::train::set_option(c, "--lr-scaling", {"cubic"});
    FAIL() << "expected an error";
  } catch (const distsgd::Error& e) {
    EXPECT_NE(std::string(e.what()).find("--lr-scaling"), std::string::npos) << e.what();
  }
  c = small_config(dir / "bad");
  c.resume = dir / "nothing-here";
  EXPECT_THROW(run_training(c), distsgd::Error);
}
