// The extension seam: an algorithm that a program of its own registers (examples/extension/shrunk_allreduce.cpp: its
// worker, catalogue entry, simulator models and recipe, in one file) runs under train, simulate, study and advise
// with no change to src/, while the stock program does not know it.
#include "distsgd/experiment/study_csv.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

namespace distsgd::testing {
namespace {

const std::string kProfile = std::string(DISTSGD_SOURCE_DIR) + "/tests/fixtures/lenet5-one-core.json";

CommandResult run_extension(const std::string& args) {
  return run_shell(std::string(DISTSGD_EXTENSION_BINARY) + " " + args + " 2>&1");
}

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_file(path)); }

// Two processes, a few steps of a small MLP on synthetic data.
std::string small_run(const std::string& out, int64_t steps) {
  return " --workers 2 --model mlp --mlp-width 16 --dataset synthetic --synthetic-train-size 256 "
         "--synthetic-test-size 64 --batch-size 16 --threads 1 --no-checkpoint --lr 0.05 --max-steps " +
         std::to_string(steps) + " --out " + out;
}

double test_loss_of(const CommandResult& run, const std::string& dir) {
  EXPECT_EQ(run.exit_code, 0) << run.output;
  if (run.exit_code != 0) return -1;
  return summary_of(dir)["test_loss"].get<double>();
}

TEST(ExtensionSeam, TrainRunsTheRegisteredAlgorithmOverRealProcesses) {
  TempDir dir;
  const auto stock = run_distsgd("train --algo shrunk-allreduce" + small_run(dir / "stock", 2));
  EXPECT_NE(stock.exit_code, 0);
  EXPECT_NE(stock.output.find("unknown algorithm 'shrunk-allreduce'"), std::string::npos) << stock.output;

  // --shrink 1 is AR-SGD without overlap, bit for bit (the same allreduce and the same optimizer step).
  const double shrink_one =
      test_loss_of(run_extension("train --algo shrunk-allreduce --shrink 1" + small_run(dir / "one", 6)), dir / "one");
  const double arsgd =
      test_loss_of(run_extension("train --algo arsgd --overlap none" + small_run(dir / "ar", 6)), dir / "ar");
  EXPECT_EQ(shrink_one, arsgd);
  // --shrink 0 reaches both workers: the parameters never move, so 3 and 6 steps end at the same loss.
  const double frozen3 =
      test_loss_of(run_extension("train --algo shrunk-allreduce --shrink 0" + small_run(dir / "z3", 3)), dir / "z3");
  const double frozen6 =
      test_loss_of(run_extension("train --algo shrunk-allreduce --shrink 0" + small_run(dir / "z6", 6)), dir / "z6");
  EXPECT_EQ(frozen3, frozen6);
  EXPECT_NE(frozen6, shrink_one);

  const auto summary = summary_of(dir / "one");
  EXPECT_EQ(summary["algorithm"], "shrunk-allreduce");
  EXPECT_EQ(summary["workers"], 2);
  EXPECT_GT(summary.value("bytes_sent_per_worker", 0.0), 0) << summary.dump();
  EXPECT_EQ(read_json(dir / "z6/config.json")["shrink"], 0.0);
  // Its rule is checked like a built-in's.
  const auto bad = run_extension("train --algo shrunk-allreduce --shrink 2" + small_run(dir / "bad", 1));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--shrink"), std::string::npos) << bad.output;
}

// The registered closed form and DES workload model AR-SGD without overlap: the same predictions at every size.
TEST(ExtensionSeamModels, SimulatePredictsTheRegisteredAlgorithmInBothFidelities) {
  TempDir dir;
  for (const std::string fidelity : {"analytical", "des"}) {
    const std::string common =
        " --profile " + kProfile + " --cluster 10gbe --workers 2,8,32 --fidelity " + fidelity + " --out ";
    const auto shrunk = run_extension("simulate --algo shrunk-allreduce" + common + (dir / "s.json"));
    ASSERT_EQ(shrunk.exit_code, 0) << shrunk.output;
    EXPECT_NE(shrunk.output.find("shrunk-allreduce"), std::string::npos) << shrunk.output;
    const auto arsgd = run_extension("simulate --algo arsgd --overlap none" + common + (dir / "a.json"));
    ASSERT_EQ(arsgd.exit_code, 0) << arsgd.output;
    const auto s = read_json(dir / "s.json")["predictions"], a = read_json(dir / "a.json")["predictions"];
    ASSERT_EQ(s.size(), 3u);
    ASSERT_EQ(s.size(), a.size());
    for (size_t i = 0; i < s.size(); ++i) {
      EXPECT_EQ(s[i]["workers"], a[i]["workers"]);
      EXPECT_GT(s[i]["samples_per_second"].get<double>(), 0);
      EXPECT_DOUBLE_EQ(s[i]["samples_per_second"].get<double>(), a[i]["samples_per_second"].get<double>())
          << fidelity << " at " << s[i]["workers"];
    }
  }
  const auto stock = run_distsgd("simulate --algo shrunk-allreduce --profile " + kProfile + " --cluster 10gbe");
  EXPECT_NE(stock.exit_code, 0);
  EXPECT_NE(stock.output.find("shrunk-allreduce"), std::string::npos) << stock.output;
}

TEST(ExtensionSeam, StudyRunsAndPredictsTheRegisteredAlgorithm) {
  TempDir dir;
  const std::string spec = dir / "spec.json";
  std::ofstream(spec) << R"({"name": "extension", "base": {"--model": "lenet5", "--dataset": "synthetic",
      "--synthetic-train-size": 512, "--synthetic-test-size": 128, "--batch-size": 32, "--epochs": 1,
      "--no-checkpoint": true, "--threads": 1, "--workers": 2},
      "axes": {"--algo": ["shrunk-allreduce", "arsgd"]},
      "recipes": {"shrunk-allreduce": {"--shrink": 0.5}, "arsgd": {"--overlap": "none"}},
      "simulate": {"clusters": {"": "10gbe"}, "profile_repeats": 3}})";
  const auto run = run_extension("study " + spec + " --out " + (dir / "study"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto results = experiment::read_csv(dir / "study/results.csv");
  ASSERT_EQ(results.rows.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(results.at(r, "status"), "done") << results.at(r, "cell");
    EXPECT_GT(std::stod(results.at(r, "predicted.samples_per_second")), 0) << results.at(r, "predicted.note");
  }
  EXPECT_EQ(results.at(0, "algorithm"), "shrunk-allreduce");
  const auto config = read_json(dir / ("study/" + results.at(0, "run_dir") + "/config.json"));
  EXPECT_EQ(config["shrink"], 0.5);
}

// advise takes the algorithm's recipe: among the default candidates, ranked by its predicted throughput, and as a
// virtual cluster of the advised size trained with the recipe's flags.
TEST(ExtensionSeamModels, AdviseRanksTheRegisteredAlgorithmFromItsRecipe) {
  TempDir dir;
  auto run = run_extension("advise --profile " + kProfile + " --cluster 10gbe --workers 16 --dir " + (dir / "all"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  bool ranked = false;
  const auto all = read_json(dir / "all/advice.json");
  for (const auto& row : all["ranking"]) {
    if (row["algorithm"] != "shrunk-allreduce") continue;
    ranked = true;
    EXPECT_EQ(row["family"], "synchronous");
    EXPECT_GT(row["predicted_samples_per_second"].get<double>(), 0);
  }
  EXPECT_TRUE(ranked) << run.output;

  run = run_extension("advise --virtual --profile " + kProfile +
                      " --cluster 10gbe --workers 8 --algos shrunk-allreduce --target-accuracy 0.2 "
                      "--convergence-epochs 1 --evals-per-epoch 2 --model lenet5 --dataset synthetic "
                      "--synthetic-train-size 1024 --synthetic-test-size 128 --dir " +
                      (dir / "virtual"));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto advice = read_json(dir / "virtual/advice.json");
  ASSERT_EQ(advice["ranking"].size(), 1u);
  const std::string run_dir = advice["ranking"][0]["convergence_run"];
  const auto summary = summary_of(run_dir);
  EXPECT_EQ(summary["algorithm"], "shrunk-allreduce");
  EXPECT_EQ(summary["virtual"], true);
  EXPECT_EQ(summary["workers"], 8);
  EXPECT_EQ(read_json(run_dir + "/config.json")["shrink"], 0.5);
}

}  // namespace
}  // namespace distsgd::testing
