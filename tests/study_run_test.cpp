// `distsgd study` end to end on synthetic data: the cells run, results.csv and curves.csv hold what their run
// directories hold, a resumed study skips the finished cell, a failing cell is recorded and the study goes on, and
// Ctrl-C stops it cleanly.
#include "distsgd/experiment/self_command.hpp"
#include "distsgd/experiment/study_csv.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace distsgd::experiment {
namespace {

using testing::read_file;
using testing::run_distsgd;
using testing::run_shell;
using testing::TempDir;

// Two epochs of lenet5 on 512 synthetic images: well under a second of training per cell.
const char* const kBase =
    R"("--model": "lenet5", "--dataset": "synthetic", "--synthetic-train-size": 512, "--synthetic-test-size": 128,
       "--batch-size": 32, "--epochs": 2, "--no-checkpoint": true, "--threads": 1)";

std::string write_spec(const TempDir& dir, const std::string& text) {
  const std::string path = dir / "spec.json";
  std::ofstream(path) << text;
  return path;
}

nlohmann::json json_of(const std::string& path) { return nlohmann::json::parse(read_file(path)); }

std::filesystem::file_time_type modified(const std::string& path) { return std::filesystem::last_write_time(path); }

TEST(StudyRun, TwoCellsEndToEndThenResumeSkipsTheFinishedCell) {
  TempDir dir;
  const std::string spec = write_spec(dir, std::string(R"({"name": "two", "base": {)") + kBase + R"(},
      "axes": {"--workers": [1, 2]}, "simulate": {"clusters": {"": "10gbe"}, "profile_repeats": 3}})");
  const std::string out = dir / "study";
  auto run = run_distsgd("study " + spec + " --out " + out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("study: 1/2 cells done | running workers=2"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("ETA"), std::string::npos) << run.output;

  const auto results = read_csv(out + "/results.csv");
  ASSERT_EQ(results.rows.size(), 2u);
  size_t evaluations = 0;
  for (size_t r = 0; r < 2; ++r) {
    const std::string cell = "workers=" + std::to_string(r + 1);
    EXPECT_EQ(results.at(r, "cell"), cell);
    EXPECT_EQ(results.at(r, "status"), "done");
    EXPECT_EQ(results.at(r, "axis.workers"), std::to_string(r + 1));
    EXPECT_EQ(results.at(r, "run_dir"), "cells/" + cell);
    // Every summary.json figure under its own name, nested ones with dots.
    const auto summary = json_of(out + "/cells/" + cell + "/summary.json");
    EXPECT_EQ(std::stod(results.at(r, "test_accuracy")), summary["test_accuracy"].get<double>());
    EXPECT_EQ(std::stod(results.at(r, "samples_per_second")), summary["samples_per_second"].get<double>());
    EXPECT_EQ(std::stod(results.at(r, "seconds_per_iteration.forward")),
              summary["seconds_per_iteration"]["forward"].get<double>());
    EXPECT_EQ(std::stoll(results.at(r, "workers")), static_cast<long long>(r + 1));
    // The simulator's prediction for the same configuration (the spec names a cluster for loopback runs).
    EXPECT_GT(std::stod(results.at(r, "predicted.samples_per_second")), 0) << results.at(r, "predicted.note");
    EXPECT_EQ(results.at(r, "predicted.cluster"), "10gbe");
    EXPECT_EQ(results.at(r, "predicted.samples_per_second_low"), "");  // a preset has no calibration's range
    std::ifstream metrics(out + "/cells/" + cell + "/metrics.jsonl");
    for (std::string line; std::getline(metrics, line);) ++evaluations;
  }
  // The model's profile, measured in the study's process: the file the predictions read, and profile's table in its
  // log.
  int profiles = 0;
  for (const auto& entry : std::filesystem::directory_iterator(out + "/simulation/logs")) {
    if (entry.path().filename().string().rfind("profile-", 0) != 0) continue;
    ++profiles;
    EXPECT_NE(read_file(entry.path()).find("sum of tensors: forward"), std::string::npos) << entry.path();
  }
  EXPECT_EQ(profiles, 1);  // one model, batch and thread count
  const auto curves = read_csv(out + "/curves.csv");
  ASSERT_EQ(curves.rows.size(), evaluations);
  EXPECT_EQ(evaluations, 4u);  // epochs 1 and 2 of each cell
  for (const char* column : {"cell", "axis.workers", "epoch", "wall_seconds", "test_accuracy", "test_loss"}) {
    EXPECT_TRUE(curves.has_column(column)) << column;
  }
  const auto last =
      nlohmann::json::parse(read_file(out + "/cells/workers=2/metrics.jsonl")
                                .substr(read_file(out + "/cells/workers=2/metrics.jsonl").find('\n') + 1));
  EXPECT_EQ(curves.at(3, "cell"), "workers=2");
  EXPECT_EQ(std::stod(curves.at(3, "epoch")), last["epoch"].get<double>());
  EXPECT_EQ(std::stod(curves.at(3, "test_accuracy")), last["test_accuracy"].get<double>());

  // An interrupted cell has no record: the next run of the study runs it again and keeps the finished one.
  const auto kept = modified(out + "/cells/workers=1/summary.json");
  const auto redone = modified(out + "/cells/workers=2/summary.json");
  std::filesystem::remove(out + "/cells/workers=2/study_cell.json");
  run = run_distsgd("study " + spec + " --out " + out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("1 of 2 cells finished earlier (kept); running the other 1"), std::string::npos)
      << run.output;
  EXPECT_EQ(modified(out + "/cells/workers=1/summary.json"), kept);
  EXPECT_NE(modified(out + "/cells/workers=2/summary.json"), redone);
  EXPECT_EQ(read_csv(out + "/results.csv").at(1, "status"), "done");

  // A cell recorded done whose summary.json is gone (removed, or its run directory emptied) runs again too.
  std::filesystem::remove(out + "/cells/workers=1/summary.json");
  run = run_distsgd("study " + spec + " --out " + out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("1 of 2 cells finished earlier (kept); running the other 1"), std::string::npos)
      << run.output;
  EXPECT_TRUE(std::filesystem::exists(out + "/cells/workers=1/summary.json"));
  EXPECT_EQ(read_csv(out + "/results.csv").at(0, "status"), "done");
}

// On a calibrated cluster file (calibrate --noise), each prediction in results.csv carries the range of the clusters
// that fit the calibration's points within their noise: a measured cell and one only simulated.
TEST(StudyRun, PredictionsOnACalibratedClusterCarryTheirRange) {
  TempDir dir;
  auto cluster = sim::to_json(sim::load_cluster("10gbe"));
  cluster["calibration"]["consistent_clusters"] = nlohmann::json::array();
  for (const double alpha : {1e-6, 1e-3}) {
    auto other = sim::to_json(sim::load_cluster("10gbe"));
    other["alpha_seconds"] = alpha;
    cluster["calibration"]["consistent_clusters"].push_back(other);
  }
  std::ofstream(dir / "calibrated.json") << cluster.dump();
  const std::string spec = write_spec(dir, std::string(R"({"name": "ranged", "base": {)") + kBase +
                                               R"(, "--algo": "arsgd"}, "axes": {"--workers": [1]},
      "simulate_workers": [8], "simulate": {"clusters": {"": ")" +
                                               (dir / "calibrated.json") + R"("}, "profile_repeats": 3}})");
  const std::string out = dir / "study";
  const auto run = run_distsgd("study " + spec + " --out " + out);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto results = read_csv(out + "/results.csv");
  ASSERT_EQ(results.rows.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    const double predicted = std::stod(results.at(r, "predicted.samples_per_second"));
    const double low = std::stod(results.at(r, "predicted.samples_per_second_low"));
    const double high = std::stod(results.at(r, "predicted.samples_per_second_high"));
    EXPECT_LE(low, predicted) << r;
    EXPECT_GE(high, predicted) << r;
    // Eight workers' ring pays 14 start-ups of 1 ms on one of the clusters: a real range; one worker sends nothing.
    if (results.at(r, "workers") == "8") EXPECT_LT(low, 0.9 * high);
  }
}

TEST(StudyRun, AFailingCellIsRecordedWithItsReasonAndTheStudyGoesOn) {
  TempDir dir;
  const std::string spec = write_spec(dir, std::string(R"({"base": {)") + kBase + R"(},
      "axes": {"data": [{"label": "missing", "--dataset": "mnist", "--data-dir": "/nonexistent"}, {"label": "ok"}]},
      "simulate": false})");
  const auto run = run_distsgd("study " + spec + " --out " + dir / "study");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("study: missing failed: "), std::string::npos) << run.output;
  const auto results = read_csv(dir / "study/results.csv");
  ASSERT_EQ(results.rows.size(), 2u);
  EXPECT_EQ(results.at(0, "status"), "failed");
  EXPECT_NE(results.at(0, "reason").find("/nonexistent"), std::string::npos) << results.at(0, "reason");
  EXPECT_EQ(results.at(1, "status"), "done");
  EXPECT_EQ(results.at(1, "predicted.note"), "simulation turned off in the spec");
}

TEST(StudyRun, CtrlCStopsTheRunningCellAndLeavesItToRunAgain) {
  TempDir dir;
  const std::string spec = write_spec(dir, R"({"base": {"--dataset": "synthetic", "--synthetic-train-size": 512,
      "--batch-size": 32, "--epochs": 100000, "--time-budget": 60, "--workers": 2, "--threads": 1,
      "--no-checkpoint": true}, "axes": {"--seed": [1, 2]}, "simulate": false})");
  const std::string out = dir / "study";
  // Ctrl-C once the first cell is training.
  const auto run = run_shell(std::string(DISTSGD_BINARY) + " study " + spec + " --out " + out + " 2>&1 & pid=$!; " +
                             "for i in $(seq 600); do grep -q epoch " + out +
                             "/logs/seed=1.log 2>/dev/null && break; sleep 0.1; done; kill -INT $pid; wait $pid; "
                             "echo exit=$?");
  EXPECT_NE(run.output.find("exit=130"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("study: interrupted; finished cells are kept"), std::string::npos) << run.output;
  EXPECT_NE(read_file(out + "/logs/seed=1.log").find("distsgd: interrupted; stopped 2 processes"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(out + "/cells/seed=1/study_cell.json"));
  const auto results = read_csv(out + "/results.csv");
  EXPECT_EQ(results.at(0, "status"), "pending");
  EXPECT_EQ(results.at(1, "status"), "pending");
}

TEST(StudyRun, BadInputIsOneClearLine) {
  TempDir dir;
  const auto check = [](const std::string& args, const std::string& expected) {
    const auto run = run_distsgd(args);
    EXPECT_EQ(run.exit_code, 1) << args;
    EXPECT_NE(run.output.find("distsgd: error: " + expected), std::string::npos) << args << "\n" << run.output;
    EXPECT_EQ(std::count(run.output.begin(), run.output.end(), '\n'), 1) << run.output;
  };
  check("study --preset nope", "--preset: there is no preset 'nope' (presets: demo, ");
  check("study " + dir / "missing.json", dir / "missing.json: cannot read the study specification");
  check("study " + write_spec(dir, R"({"axes": {"--workers": []}})") + " --dry-run",
        dir / "spec.json: axes.--workers: an axis needs at least one value");
  check("study " + write_spec(dir, R"({"axes": {"--algorithm": ["bsp"]}})"),
        dir / "spec.json: axes.--algorithm: unknown flag --algorithm");
  check("study", "distsgd study: give a specification file or --preset NAME");
}

// A specification without axes is one cell with distsgd train's defaults; its empty flag list made printing or
// recording the cell's arguments die with "basic_string::substr" (issue 26).
TEST(StudyRun, ASpecWithoutAxesIsOneCellOfTheDefaults) {
  TempDir dir;
  for (const std::string spec : {R"({"axes": {}})", R"({"grids": [{"name": "a", "axes": {}}]})",
                                 R"({"axes": {"variant": [{"label": "plain"}]}})"}) {
    const auto run = run_distsgd("study " + write_spec(dir, spec) + " --dry-run");
    EXPECT_EQ(run.exit_code, 0) << spec << "\n" << run.output;
    EXPECT_NE(run.output.find("1 runs, 0 simulated only"), std::string::npos) << spec << "\n" << run.output;
  }
  EXPECT_EQ(arguments_text({}), "");
  EXPECT_EQ(command_text({}), "distsgd");
  EXPECT_EQ(arguments_text({"--net", "1gbit,delay=5ms", "--out", "a b"}), "--net 1gbit,delay=5ms --out 'a b'");
  EXPECT_EQ(command_text({"train", ""}), "distsgd train ''");
}

}  // namespace
}  // namespace distsgd::experiment
