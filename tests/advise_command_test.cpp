// `distsgd advise`: the ranking follows predicted time to the target (samples to the target from cached convergence
// runs / the simulator's throughput), not throughput alone; without convergence data it ranks by throughput and
// says so; samples-to-target from an evaluation log; bad flags.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "distsgd/experiment/advice.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "test_util.hpp"

namespace distsgd::testing {
namespace {

const char* kAdviseProfile = R"({"model": "toy", "batch_size": 32, "update_seconds_per_byte": 1e-10, "tensors": [
  {"name": "a", "parameters": 1000000, "forward_seconds": 0.001, "backward_seconds": 0.002},
  {"name": "b", "parameters": 500000, "forward_seconds": 0.002, "backward_seconds": 0.004}]})";

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_file(path)); }

// A finished run directory as distsgd train leaves it, with these evaluations (samples, test accuracy).
void write_convergence_run(const std::string& dir, const std::vector<std::pair<double, double>>& evaluations) {
  std::filesystem::create_directories(dir);
  std::ofstream metrics(dir + "/metrics.jsonl");
  for (const auto& [samples, accuracy] : evaluations) {
    metrics << nlohmann::json{{"samples", samples}, {"test_accuracy", accuracy}}.dump() << "\n";
  }
  std::ofstream(dir + "/summary.json") << nlohmann::json{{"model", "toy"}, {"batch_size", 32},
                                                         {"workers", 4},   {"steps", 100},
                                                         {"epochs", 2.0},  {"samples_per_second", 1000.0}}
                                              .dump();
}

std::vector<std::string> ranked_algorithms(const nlohmann::json& advice) {
  std::vector<std::string> names;
  for (const auto& row : advice["ranking"]) names.push_back(row["algorithm"]);
  return names;
}

TEST(AdviseCommand, RanksByTimeToTargetNotByThroughput) {
  TempDir dir;
  std::ofstream(dir / "p.json") << kAdviseProfile;
  const std::string advise = "advise --profile " + (dir / "p.json") + " --cluster emulated-1gbit --workers 8 --algos " +
                             "arsgd,sgp,gosgd,adpsgd --target-accuracy 0.84 --dir " + (dir / "a");

  // No convergence runs yet: by predicted throughput alone, and it says so.
  auto r = run_distsgd(advise);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ranked by predicted throughput alone"), std::string::npos) << r.output;
  auto advice = read_json(dir / "a/advice.json");
  EXPECT_EQ(advice["ranked_by"], "throughput");
  std::map<std::string, double> throughput;
  double previous = 1e300;
  for (const auto& row : advice["ranking"]) {
    throughput[row["algorithm"]] = row["predicted_samples_per_second"];
    EXPECT_LE(row["predicted_samples_per_second"].get<double>(), previous);
    previous = row["predicted_samples_per_second"];
    // The simulator's own prediction for this cluster and worker count.
    const auto prediction = read_json(row["prediction_file"]);
    EXPECT_EQ(prediction["predictions"][0]["samples_per_second"], row["predicted_samples_per_second"]);
    EXPECT_EQ(prediction["predictions"][0]["workers"], 8);
  }
  // SGP is predicted about twice as fast as AR-SGD here (one model exchange vs a ring allreduce per iteration).
  const double ratio = throughput["sgp"] / throughput["arsgd"];
  ASSERT_GT(ratio, 1.2);
  ASSERT_LT(ratio, 3.0) << "the test needs SGP less than 3x faster than AR-SGD";

  // SGP needs 3x the samples of AR-SGD to reach 0.84: it ranks below AR-SGD although faster. GoSGD never reaches
  // the target; AD-PSGD has no run.
  write_convergence_run(dir / "a/convergence/cells/algorithm=arsgd-w4",
                        {{60000, 0.80}, {120000, 0.86}});  // 100,000 samples
  write_convergence_run(dir / "a/convergence/cells/algorithm=sgp-w4",
                        {{120000, 0.70}, {240000, 0.82}, {360000, 0.86}});  // 300,000
  write_convergence_run(dir / "a/convergence/cells/algorithm=gosgd-w4", {{60000, 0.75}, {120000, 0.80}});
  r = run_distsgd(advise);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("ranked by predicted throughput alone"), std::string::npos) << r.output;
  advice = read_json(dir / "a/advice.json");
  EXPECT_EQ(advice["ranked_by"], "time_to_target");
  EXPECT_EQ(ranked_algorithms(advice), (std::vector<std::string>{"arsgd", "sgp", "gosgd", "adpsgd"}));
  const auto& first = advice["ranking"][0];
  EXPECT_NEAR(first["samples_to_target"].get<double>(), 100000, 1e-6);
  EXPECT_NEAR(first["time_to_target_seconds"].get<double>(), 100000 / throughput["arsgd"], 1e-9);
  EXPECT_NEAR(advice["ranking"][1]["samples_to_target"].get<double>(), 300000, 1e-6);
  EXPECT_NE(advice["ranking"][2]["note"].get<std::string>().find("not reached"), std::string::npos);
  EXPECT_EQ(advice["ranking"][3]["note"], "no convergence run");
  EXPECT_NE(advice["assumptions"].get<std::string>().find("carry over"), std::string::npos);

  // With SGP needing 1.65x AR-SGD's samples, less than its throughput gains, it ranks first.
  write_convergence_run(dir / "a/convergence/cells/algorithm=sgp-w4", {{60000, 0.70}, {180000, 0.86}});  // 165,000
  ASSERT_LT(1.65, ratio);
  ASSERT_EQ(run_distsgd(advise).exit_code, 0);
  EXPECT_EQ(ranked_algorithms(read_json(dir / "a/advice.json"))[0], "sgp");
}

TEST(AdviseCommand, WithoutATargetRanksByThroughputAndSaysSo) {
  TempDir dir;
  std::ofstream(dir / "p.json") << kAdviseProfile;
  auto r = run_distsgd("advise --profile " + (dir / "p.json") + " --cluster 10gbe --workers 16 --algos bsp,arsgd " +
                       "--dir " + (dir / "a"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("no --target-accuracy or --target-loss: ranked by predicted throughput alone"),
            std::string::npos)
      << r.output;
  const auto advice = read_json(dir / "a/advice.json");
  EXPECT_EQ(advice["ranked_by"], "throughput");
  ASSERT_EQ(advice["ranking"].size(), 2u);
  EXPECT_GE(advice["ranking"][0]["predicted_samples_per_second"].get<double>(),
            advice["ranking"][1]["predicted_samples_per_second"].get<double>());
}

// On a calibrated cluster (calibrate --noise), advise ranks on each cluster that fits the calibration's points as
// well and says whether the first pick holds on all of them. Here one has a 10 ms start-up per message: AR-SGD's 30
// ring steps at 16 workers then cost more than BSP's push and pull, and the first pick is not settled.
TEST(AdviseCommand, SaysWhetherTheFirstPickHoldsOnEveryClusterThatFitsTheCalibration) {
  TempDir dir;
  std::ofstream(dir / "p.json") << kAdviseProfile;
  auto cluster = sim::to_json(sim::load_cluster("10gbe"));
  const auto with_alpha = [&](double alpha) {
    auto c = cluster;
    c["alpha_seconds"] = alpha;
    return c;
  };
  const auto advise_on = [&](const std::vector<double>& alphas, const std::string& name) {
    auto file = with_alpha(1e-6);
    file["calibration"]["consistent_clusters"] = nlohmann::json::array();
    for (const double a : alphas) file["calibration"]["consistent_clusters"].push_back(with_alpha(a));
    std::ofstream(dir / (name + ".json")) << file.dump();
    return run_distsgd("advise --profile " + (dir / "p.json") + " --cluster " + (dir / (name + ".json")) +
                       " --workers 16 --algos bsp,arsgd --dir " + (dir / name));
  };
  auto r = advise_on({1e-6, 2e-6}, "settled");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("arsgd is first on each of the 2 clusters that fit the calibration's points"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(read_json(dir / "settled/advice.json")["first_on_consistent_clusters"], (nlohmann::json{{"arsgd", 2}}));
  r = advise_on({1e-6, 1e-2}, "open");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("first on the 2 clusters that fit the calibration's points within their noise (distsgd "
                          "calibrate --noise): arsgd 1 bsp 1; the points do not settle the first pick"),
            std::string::npos)
      << r.output;
  // A preset has no such clusters: nothing is said.
  r = run_distsgd("advise --profile " + (dir / "p.json") + " --cluster 10gbe --workers 16 --algos bsp,arsgd --dir " +
                  (dir / "preset"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("clusters that fit"), std::string::npos) << r.output;
}

// --virtual: each algorithm trains as a virtual cluster of the advised size, and the ranking is by its virtual time
// to the target, read off its own evaluations.
TEST(AdviseCommand, VirtualRanksByTheVirtualRunsTimeToTargetAtTheAdvisedWorkerCount) {
  TempDir dir;
  ASSERT_EQ(
      run_distsgd("profile --model lenet5 --device titan-v --batch-size 16 --input-shape 1x28x28 --classes 10 --out " +
                  (dir / "p.json"))
          .exit_code,
      0);
  auto r = run_distsgd("advise --virtual --profile " + (dir / "p.json") +
                       " --cluster 10gbe --workers 8 --algos arsgd,asp --target-accuracy 0.3 --convergence-epochs 1 "
                       "--evals-per-epoch 4 --model lenet5 --dataset synthetic --synthetic-train-size 4096 "
                       "--synthetic-test-size 256 --dir " +
                       (dir / "a"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("samples to target (w8, virtual)"), std::string::npos) << r.output;
  const auto advice = read_json(dir / "a/advice.json");
  EXPECT_EQ(advice["virtual"], true);
  EXPECT_EQ(advice["ranked_by"], "time_to_target") << r.output;
  // The runs are a study's cells (the study runner ran them), so `distsgd report DIR/virtual` draws them.
  EXPECT_EQ(count_of(read_file(dir / "a/virtual/results.csv"), ",done,"), 2);
  double previous = 0;
  for (const auto& row : advice["ranking"]) {
    const std::string run = row["convergence_run"];
    EXPECT_NE(run.find("/virtual/"), std::string::npos) << run;
    EXPECT_EQ(read_json(run + "/summary.json")["workers"], 8);
    EXPECT_EQ(read_json(run + "/summary.json")["virtual"], true);
    if (row["time_to_target_seconds"].is_null()) continue;
    // The run's own virtual seconds to the target, interpolated between its evaluations.
    std::vector<nlohmann::json> evaluations;
    std::ifstream metrics(run + "/metrics.jsonl");
    for (std::string line; std::getline(metrics, line);) evaluations.push_back(nlohmann::json::parse(line));
    EXPECT_GE(evaluations.size(), 4u);
    const auto seconds = experiment::samples_to_target(evaluations, 0.3, "wall_seconds");
    ASSERT_TRUE(seconds.samples.has_value());
    EXPECT_DOUBLE_EQ(row["time_to_target_seconds"].get<double>(), *seconds.samples);
    EXPECT_GE(*seconds.samples, previous);  // ranked by it
    previous = *seconds.samples;
  }
  // On a calibrated cluster file the virtual runs carry their range over its clusters, and advise re-ranks on each.
  auto file = sim::to_json(sim::load_cluster("10gbe"));
  auto slower = file;
  // A tenth of the links' rate (at half, ASP's lenet5 steps hardly wait for the link: 1.0004x as fast, as its workers'
  // phases moved).
  slower["worker_bytes_per_second"] = file["worker_bytes_per_second"].get<double>() / 10;
  file["calibration"]["consistent_clusters"] = {file, slower};
  std::ofstream(dir / "calibrated.json") << file.dump();
  r = run_distsgd("advise --virtual --profile " + (dir / "p.json") + " --cluster " + (dir / "calibrated.json") +
                  " --workers 8 --algos arsgd,asp --target-accuracy 0.3 --convergence-epochs 1 "
                  "--evals-per-epoch 4 --model lenet5 --dataset synthetic --synthetic-train-size 4096 "
                  "--synthetic-test-size 256 --dir " +
                  (dir / "c"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto calibrated = read_json(dir / "c/advice.json");
  int64_t firsts = 0;
  for (const auto& [name, count] : calibrated["first_on_consistent_clusters"].items()) firsts += count.get<int64_t>();
  EXPECT_EQ(firsts, 2) << r.output;
  EXPECT_NE(r.output.find("2 clusters that fit the calibration's points"), std::string::npos) << r.output;
  for (const auto& row : calibrated["ranking"]) {
    const auto range = read_json(row["convergence_run"].get<std::string>() + "/summary.json")["virtual_range"];
    ASSERT_EQ(range["relative_speeds"].size(), 2u) << range.dump();
    EXPECT_NEAR(range["relative_speeds"][0].get<double>(), 1, 1e-9);  // the best fit itself
    EXPECT_LT(range["relative_speeds"][1].get<double>(), 1);          // a tenth of its links' rate
  }
}

TEST(AdviseCommand, SamplesToTargetInterpolatesBetweenEvaluations) {
  const std::vector<nlohmann::json> log = {{{"samples", 100}, {"test_accuracy", 0.5}},
                                           {{"samples", 200}, {"test_accuracy", 0.7}},
                                           {{"samples", 300}, {"test_accuracy", 0.65}}};
  auto s = experiment::samples_to_target(log, 0.6);
  ASSERT_TRUE(s.samples.has_value());
  EXPECT_DOUBLE_EQ(*s.samples, 150);
  EXPECT_FALSE(s.upper_bound);
  EXPECT_DOUBLE_EQ(s.best_accuracy, 0.7);
  EXPECT_DOUBLE_EQ(s.samples_evaluated, 300);
  s = experiment::samples_to_target(log, 0.4);  // reached by the first evaluation: its samples bound it from above
  EXPECT_DOUBLE_EQ(*s.samples, 100);
  EXPECT_TRUE(s.upper_bound);
  EXPECT_FALSE(experiment::samples_to_target(log, 0.8).samples.has_value());
  EXPECT_FALSE(experiment::samples_to_target({}, 0.5).samples.has_value());
}

// --target-loss: the first evaluation at or below the loss, linear in between, as for an accuracy.
TEST(AdviseCommand, SamplesToATargetLossInterpolatesTheLoss) {
  const std::vector<nlohmann::json> log = {{{"samples", 100}, {"test_loss", 3.0}},
                                           {{"samples", 200}, {"test_loss", 2.0}},
                                           {{"samples", 300}, {"test_loss", 2.2}}};
  const auto s = experiment::samples_to_target(log, experiment::ProgressTarget{"test_loss", 2.5});
  ASSERT_TRUE(s.samples.has_value());
  EXPECT_DOUBLE_EQ(*s.samples, 150);
  EXPECT_FALSE(s.upper_bound);
  EXPECT_DOUBLE_EQ(s.best_loss, 2.0);
  EXPECT_FALSE(experiment::samples_to_target(log, experiment::ProgressTarget{"test_loss", 1.5}).samples.has_value());
  EXPECT_EQ(experiment::ProgressTarget({"test_loss", 2.5}).text(), "target loss 2.5");
}

TEST(AdviseCommand, BadFlagsAreOneClearError) {
  TempDir dir;
  std::ofstream(dir / "p.json") << kAdviseProfile;
  const std::string base = "advise --profile " + (dir / "p.json") + " --dir " + (dir / "a") + " ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--cluster 10gbe --workers 0", "--workers: expected a worker count of at least 1, got 0"},
      {"--cluster 10gbe --workers 4 --target-accuracy 2", "--target-accuracy: expected a fraction in [0, 1]"},
      {"--cluster 10gbe --workers 4 --algos arsgd,nope", "--algos: unknown algorithm 'nope'"},
      {"--cluster 10gbe --workers 4 --measure-convergence", "--measure-convergence needs --target-accuracy"},
      {"--cluster 10gbe --workers 4 --virtual", "--virtual needs --target-accuracy"},
      {"--cluster nowhere --workers 4", "--cluster: 'nowhere' is neither a preset"},
      {"--cluster 10gbe --workers 4 --fidelity exact", "--fidelity: expected analytical or des, got 'exact'"},
  };
  for (const auto& [flags, message] : cases) {
    auto r = run_distsgd(base + flags);
    EXPECT_EQ(r.exit_code, 1) << flags << "\n" << r.output;
    EXPECT_EQ(r.output.rfind("distsgd: error: ", 0), 0u) << flags << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << flags << "\n" << r.output;
  }
}

}  // namespace
}  // namespace distsgd::testing
