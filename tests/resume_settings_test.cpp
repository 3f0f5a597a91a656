// `train --resume DIR` alone (train/resume_settings.hpp): the run's own settings from config.json, flags that
// would change its training refused, limits raised taken; a run that ended is left untouched.
#include "test_util.hpp"
#include "trained_parameters.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <string>

using distsgd::testing::parameters_of;
using distsgd::testing::read_file;
using distsgd::testing::run_distsgd;
using distsgd::testing::summary_of;
using distsgd::testing::TempDir;

TEST(ResumeSettings, ResumeAloneContinuesWithTheRunsSettingsAndAFinishedRunIsLeftAlone) {
  TempDir dir;
  const std::string settings =
      " --algo arsgd --workers 2 --lr 0.07 --momentum 0.8 --slowdown 1:1.5 --lr-decay-epochs 0.5 --dataset synthetic "
      "--synthetic-shape 1x28x28 --synthetic-classes 4 --synthetic-train-size 256 --synthetic-test-size 64 --model "
      "lenet5 --batch-size 16 --threads 1 --seed 3 --progress-seconds 1000 --epochs 3 --checkpoint-every-steps 3";
  auto r = run_distsgd("train" + settings + " --max-steps 10 --no-checkpoint --out " + (dir / "straight"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string run = dir / "run";
  r = run_distsgd("train" + settings + " --max-steps 6 --out " + run);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string metrics = read_file(run + "/metrics.jsonl"), summary = read_file(run + "/summary.json");

  // Ended at its limit: nothing to do, nothing changed.
  r = run_distsgd("train --resume " + run);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("already ended (max_steps at step 6); nothing to resume"), std::string::npos) << r.output;
  EXPECT_EQ(read_file(run + "/metrics.jsonl"), metrics);
  EXPECT_EQ(read_file(run + "/summary.json"), summary);

  // A setting of the training itself may not change; the line names both values.
  r = run_distsgd("train --resume " + run + " --max-steps 10 --lr 0.1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--lr 0.1 differs from the run's 0.07"), std::string::npos) << r.output;
  EXPECT_EQ(read_file(run + "/summary.json"), summary);

  // A raised limit continues the run with its own settings (the same flags repeated are accepted), to the bits of
  // the straight run.
  r = run_distsgd("train --resume " + run + " --max-steps 10 --momentum 0.8");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("resuming from"), std::string::npos) << r.output;
  EXPECT_EQ(summary_of(run)["steps"], 10);
  const auto config = nlohmann::json::parse(read_file(run + "/config.json"));
  EXPECT_EQ(config["lr"], 0.07);
  EXPECT_EQ(config["workers"], 2);
  EXPECT_EQ(config["max_steps"], 10);
  EXPECT_EQ(config["slowdowns"].dump(), "[[1,1.5]]");
  EXPECT_TRUE(at::equal(parameters_of(dir / "straight"), parameters_of(run)));
}
