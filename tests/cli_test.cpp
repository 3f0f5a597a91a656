// The distsgd program end to end: real training, help, and one clear error for bad input.
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>

using distsgd::testing::read_file;
using distsgd::testing::run_distsgd;
using distsgd::testing::TempDir;

// The acceptance run: lenet5 on real Fashion-MNIST, one epoch, test accuracy >= 0.84.
TEST(EndToEnd, Lenet5OnFashionMnistOneEpochReaches084) {
  if (!distsgd::testing::have_fashion_mnist()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  TempDir dir;
  auto r = run_distsgd(
      "train --model lenet5 --dataset fashion-mnist --epochs 1 --batch-size 64 --lr 0.05 "
      "--seed 1 --workers 1 --out " +
      dir / "run");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("result "), std::string::npos) << r.output;
  auto summary = nlohmann::json::parse(read_file(dir / "run/summary.json"));
  EXPECT_GE(summary["test_accuracy"].get<double>(), 0.84) << summary.dump(2);
  EXPECT_EQ(summary["model"], "lenet5");
  EXPECT_EQ(summary["dataset"], "fashion-mnist");
  EXPECT_EQ(summary["parameters"], 61706);
  EXPECT_EQ(summary["samples"], 937 * 64);
}

TEST(Cli, HelpDescribesTheTrainFlags) {
  auto top = run_distsgd("--help");
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.output.find("train"), std::string::npos);
  auto train = run_distsgd("train --help");
  EXPECT_EQ(train.exit_code, 0);
  for (const char* flag : {"--model", "--dataset", "--data-dir", "--epochs", "--batch-size", "--lr", "--seed",
                           "--threads", "--out", "--resume", "--time-budget", "--target-accuracy", "--lr-scaling",
                           "--warmup-epochs", "--lr-decay-epochs", "--workers"}) {
    EXPECT_NE(train.output.find(flag), std::string::npos) << flag;
  }
}

TEST(Cli, UnknownModelListsTheValidOnes) {
  TempDir dir;
  auto r = run_distsgd("train --model resnet7 --out " + dir / "x");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("resnet7"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("lenet5"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("vgg16"), std::string::npos) << r.output;
}

TEST(Cli, UnknownDatasetListsTheValidOnes) {
  TempDir dir;
  auto r = run_distsgd("train --dataset imagenet22k --out " + dir / "x");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("imagenet22k"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("fashion-mnist"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cifar10"), std::string::npos) << r.output;
}

TEST(Cli, MissingDataFileIsNamed) {
  TempDir dir;
  auto r = run_distsgd("train --data-dir " + dir / "empty" + " --out " + dir / "x");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find(dir / "empty"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("train-images-idx3-ubyte"), std::string::npos) << r.output;
}

TEST(Cli, BadFlagValuesGiveOneClearError) {
  TempDir dir;
  auto r = run_distsgd("train --batch-size 0 --out " + dir / "x");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--batch-size"), std::string::npos) << r.output;
  auto s = run_distsgd("train --dataset synthetic --synthetic-shape 3x32 --out " + dir / "y");
  EXPECT_NE(s.exit_code, 0);
  EXPECT_NE(s.output.find("CxHxW"), std::string::npos) << s.output;
  auto w = run_distsgd("train --workers 4 --algo sgd --out " + dir / "z");
  EXPECT_NE(w.exit_code, 0);
  EXPECT_NE(w.output.find("--workers"), std::string::npos) << w.output;
  auto u = run_distsgd("train --algo nosuch --out " + dir / "z");
  EXPECT_NE(u.exit_code, 0);
  EXPECT_NE(u.output.find("nosuch"), std::string::npos) << u.output;
}

// CLI11's parse errors (an unknown flag or command, a missing value, no command) exited 106-114 with CLI11's own
// text (issue 26); they are one line "distsgd: error: ..." and status 1, as every other error. --help still succeeds.
TEST(Cli, ParseErrorsAreOneLineAndStatusOne) {
  for (const std::string args :
       {"train --no-such-flag", "train --lr", "", "nosuchcommand", "simulate", "train --workers 2 3 --lr"}) {
    const auto r = run_distsgd(args);
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.output;
    EXPECT_EQ(r.output.rfind("distsgd: error: ", 0), 0u) << args << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << args << "\n" << r.output;
  }
  const auto unknown = run_distsgd("train --no-such-flag");
  EXPECT_NE(unknown.output.find("--no-such-flag"), std::string::npos) << unknown.output;
  EXPECT_NE(unknown.output.find("distsgd COMMAND --help"), std::string::npos) << unknown.output;
  EXPECT_EQ(run_distsgd("train --help").exit_code, 0);
  EXPECT_EQ(run_distsgd("--help-all").exit_code, 0);
}
