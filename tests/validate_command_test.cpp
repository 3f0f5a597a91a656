// `distsgd validate`: a tiny real grid (lenet5 on synthetic data, two algorithms, two workers, loopback) whose
// validation.json agrees with its run directories and with its own MAPE, a re-run that trains nothing, a resumed
// grid that trains only what is missing; the steady-state throughput read from a trace; and bad flags.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <thread>

#include "distsgd/core/error.hpp"
#include "distsgd/core/host_cores.hpp"
#include "distsgd/experiment/algorithm_recipes.hpp"
#include "distsgd/experiment/run_directory.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "test_util.hpp"

namespace distsgd::testing {
namespace {

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_file(path)); }

// The measured figure as validate defines it, recomputed here from trace.json: each worker's iterations from
// `warmup` on, from one forward start to the next, batch / mean time, summed over workers.
double steady_from_trace(const std::string& run_dir, int64_t warmup) {
  const auto summary = read_json(run_dir + "/summary.json");
  const auto trace = read_json(run_dir + "/trace.json");
  const int64_t workers = summary["workers"];
  const double batch = summary["batch_size"];
  std::map<int64_t, std::vector<double>> starts;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "forward" && e["tid"] == 0 && e["pid"] < workers) {
      starts[e["pid"]].push_back(e["ts"].get<double>() / 1e6);
    }
  }
  // Each worker from its warm-up on, up to the start of the first worker's last iteration (every one training).
  double first_last_start = std::numeric_limits<double>::infinity();
  for (auto& [rank, s] : starts) {
    std::sort(s.begin(), s.end());
    first_last_start = std::min(first_last_start, s.back());
  }
  double total = 0;
  for (const auto& [rank, s] : starts) {
    size_t end = static_cast<size_t>(warmup);
    while (end + 1 < s.size() && s[end + 1] <= first_last_start) ++end;
    const double seconds = s[end] - s[static_cast<size_t>(warmup)];
    total += batch * static_cast<double>(end - static_cast<size_t>(warmup)) / seconds;
  }
  EXPECT_EQ(static_cast<int64_t>(starts.size()), workers);
  return total;
}

const std::string kGrid =
    "validate --model lenet5 --dataset synthetic --synthetic-train-size 4096 --synthetic-test-size 64 --algos "
    "arsgd,asp --workers 2 --networks loopback --iterations 30 --warmup 5 --profile-repeats 5 --fidelity analytical "
    "--out ";

TEST(ValidateCommand, TinyGridAgreesWithItsRunsAndResumes) {
  TempDir dir;
  const std::string out = dir / "v";
  auto r = run_distsgd(kGrid + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[1/2] arsgd, 2 workers, loopback, no straggler: trained"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("mean absolute percentage error per algorithm"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("validate: 2 cells, 2 done, 0 failed"), std::string::npos) << r.output;  // the runner's

  const auto validation = read_json(out + "/validation.json");
  const auto& rows = validation["rows"];
  ASSERT_EQ(rows.size(), 2u);
  // The runs are a study's cells (the study runner ran them): results.csv lists both, done, for `distsgd report`.
  const std::string results = read_file(out + "/results.csv");
  EXPECT_EQ(count_of(results, ",done,"), 2) << results;
  EXPECT_EQ(read_json(out + "/study.json")["cells"].size(), 2u);
  // The profile measured what the runs' ranks get of this host's cores computing together (twice as many ranks as
  // cores): the simulator's --shared-cores below.
  const auto capacity = read_json(out + "/profile-t1.json")["compute_capacity"];
  const int64_t cores = host_cores();
  EXPECT_EQ(capacity["ranks"].get<int64_t>(), 2 * cores) << capacity.dump();
  // Never more than the host has, however the thread alone was slowed (compute_capacity.cpp's bound).
  const double most = static_cast<double>(cores);
  EXPECT_GE(capacity["cores"].get<double>(), 1.0) << capacity.dump();
  EXPECT_LE(capacity["cores"].get<double>(), most) << capacity.dump();
  EXPECT_NEAR(
      capacity["cores"].get<double>(),
      std::clamp(2.0 * most * capacity["alone_seconds"].get<double>() / capacity["together_seconds"].get<double>(), 1.0,
                 most),
      1e-9)
      << capacity.dump();
  std::map<std::string, std::vector<double>> errors;
  for (const auto& row : rows) {
    const std::string run_dir = row["run_dir"];
    const auto summary = read_json(run_dir + "/summary.json");
    // The row's figures are the run directory's.
    EXPECT_EQ(row["summary_samples_per_second"].get<double>(), summary["samples_per_second"].get<double>());
    EXPECT_EQ(summary["algorithm"], row["algorithm"]);
    EXPECT_EQ(summary["steps"].get<int64_t>(), 30);
    // Same definition; not the same rounding (validate scales the microsecond stamps by 1e-6, this file divides
    // by 1e6: one ulp of a stamp in seconds is a few 1e-6 of a 30-iteration span).
    EXPECT_NEAR(row["measured_samples_per_second"].get<double>(), steady_from_trace(run_dir, 5),
                1e-4 * row["measured_samples_per_second"].get<double>());
    // The prediction is the simulator's own output for this configuration.
    const auto& p = row["predictions"]["analytical"];
    ASSERT_TRUE(p.contains("samples_per_second")) << p.dump();
    const auto prediction = read_json(p["file"]);
    EXPECT_EQ(prediction["predictions"][0]["samples_per_second"].get<double>(), p["samples_per_second"].get<double>());
    EXPECT_EQ(prediction["predictions"][0]["workers"].get<int64_t>(), 2);
    const double measured = row["measured_samples_per_second"];
    EXPECT_DOUBLE_EQ(p["error"].get<double>(), (p["samples_per_second"].get<double>() - measured) / measured);
    errors[row["algorithm"]].push_back(std::fabs(p["samples_per_second"].get<double>() - measured) / measured);
    // The diagnostic (ana*) is the same model on a profile whose forward and backward sum to the run's own.
    const auto& diagnostic = row["predictions"]["analytical-run-compute"];
    ASSERT_TRUE(diagnostic.contains("samples_per_second")) << diagnostic.dump();
    EXPECT_NE(diagnostic["command"].get<std::string>().find(run_dir + "/profile-run-compute.json"), std::string::npos);
    // The run's compute already holds the sharing of the host's cores, so the diagnostic does not share them again
    // (the prediction does, as the run did).
    EXPECT_NE(diagnostic["command"].get<std::string>().find("--shared-cores 0"), std::string::npos);
    EXPECT_NE(p["command"].get<std::string>().find("--shared-cores " + capacity["cores"].dump()), std::string::npos)
        << p["command"];
    double forward = 0, backward = 0;
    const auto rescaled = read_json(run_dir + "/profile-run-compute.json");
    for (const auto& t : rescaled["tensors"]) {
      forward += t["forward_seconds"].get<double>();
      backward += t["backward_seconds"].get<double>();
    }
    EXPECT_NEAR(forward, summary["seconds_per_iteration"]["forward"].get<double>(), 1e-9);
    EXPECT_NEAR(backward, summary["seconds_per_iteration"]["backward"].get<double>(), 1e-9);
  }
  // asp runs with its server and the recipe's flags, and the simulator is told the same.
  EXPECT_EQ(rows[1]["servers"].get<int64_t>(), 1);
  EXPECT_NE(rows[1]["train_command"].get<std::string>().find("--momentum 0"), std::string::npos);
  EXPECT_NE(rows[1]["predictions"]["analytical"]["command"].get<std::string>().find("--servers 1"), std::string::npos);
  // MAPE per algorithm: the mean of |predicted - measured| / measured over its rows.
  for (const auto& [algorithm, e] : errors) {
    double mean = 0;
    for (const double x : e) mean += x / static_cast<double>(e.size());
    EXPECT_DOUBLE_EQ(validation["mape"][algorithm]["analytical"]["mape"].get<double>(), mean) << algorithm;
    EXPECT_EQ(validation["mape"][algorithm]["analytical"]["rows"].get<size_t>(), e.size());
  }

  // A re-run trains nothing: every run directory is complete.
  const std::string arsgd_summary = rows[0]["run_dir"].get<std::string>() + "/summary.json";
  const std::string asp_summary = rows[1]["run_dir"].get<std::string>() + "/summary.json";
  const auto arsgd_written = std::filesystem::last_write_time(arsgd_summary);
  r = run_distsgd(kGrid + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find(": trained"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[2/2] asp, 2 workers + 1 server(s), loopback, no straggler: cached"), std::string::npos)
      << r.output;
  EXPECT_EQ(std::filesystem::last_write_time(arsgd_summary), arsgd_written);
  EXPECT_EQ(read_json(out + "/validation.json")["rows"][0]["measured_samples_per_second"],
            rows[0]["measured_samples_per_second"]);

  // An interrupted grid resumes: only the configuration without a complete summary.json trains again.
  std::filesystem::remove(asp_summary);
  r = run_distsgd(kGrid + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[1/2] arsgd, 2 workers, loopback, no straggler: cached"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("[2/2] asp, 2 workers + 1 server(s), loopback, no straggler: trained"), std::string::npos)
      << r.output;
  EXPECT_TRUE(std::filesystem::exists(asp_summary));
  EXPECT_EQ(std::filesystem::last_write_time(arsgd_summary), arsgd_written);
}

TEST(ValidateCommand, SteadyThroughputSkipsWarmupAndEpochEnds) {
  TempDir dir;
  // 2 workers, batch 10, 4 steps per epoch (8 steps = 2 epochs): iteration 3 ends the first epoch, so the time from
  // its forward pass to the next one holds an evaluation and is left out; iteration 0 is the warm-up.
  const nlohmann::json summary = {
      {"workers", 2}, {"batch_size", 10}, {"steps", 8}, {"epochs", 2.0}, {"samples_per_second", 1.0}};
  nlohmann::json events = nlohmann::json::array();
  const std::vector<std::vector<double>> starts = {{0, 1.0, 1.1, 1.2, 5.0, 5.1, 5.2, 5.3},
                                                   {0, 1.0, 1.2, 1.4, 5.0, 5.2, 5.4, 5.6}};
  for (size_t w = 0; w < starts.size(); ++w) {
    for (const double t : starts[w]) {
      events.push_back({{"ph", "X"}, {"name", "forward"}, {"pid", w}, {"tid", 0}, {"ts", t * 1e6}, {"dur", 1}});
      events.push_back({{"ph", "X"}, {"name", "backward"}, {"pid", w}, {"tid", 0}, {"ts", t * 1e6 + 1}, {"dur", 1}});
    }
  }
  // A server's row (rank 2) is not a worker's.
  events.push_back({{"ph", "X"}, {"name", "forward"}, {"pid", 2}, {"tid", 0}, {"ts", 0}, {"dur", 1}});
  std::ofstream(dir / "trace.json") << nlohmann::json{{"traceEvents", events}}.dump();
  const auto steady = experiment::steady_throughput(dir.str(), summary, 1);
  // Worker 0: five timed iterations of 0.1 s (100 samples/s). Worker 1: three of 0.2 s (50 samples/s), since its
  // iteration from 5.2 s ends after worker 0 began its last one (5.3 s).
  ASSERT_EQ(steady.per_worker.size(), 2u);
  EXPECT_NEAR(steady.per_worker[0], 100, 1e-9);
  EXPECT_NEAR(steady.per_worker[1], 50, 1e-9);
  EXPECT_NEAR(steady.samples_per_second, 150, 1e-9);
  EXPECT_EQ(steady.timed_iterations, 3);
  EXPECT_EQ(steady.workers_timed_past_the_others, 0);
  EXPECT_THROW(experiment::steady_throughput(dir.str(), summary, 7), Error);
}

// The workers are timed together: a worker that outlasts another (asynchronous workers drift apart) runs faster
// once the other stopped, on a host whose cores they share, and that tail would overstate their joint rate. A
// straggler still warming up when the others stopped is timed over its own iterations.
TEST(ValidateCommand, SteadyThroughputTimesTheWorkersOnlyWhileEveryOneTrains) {
  TempDir dir;
  const auto write_trace = [&](const std::vector<std::vector<double>>& starts) {
    nlohmann::json events = nlohmann::json::array();
    for (size_t w = 0; w < starts.size(); ++w) {
      for (const double t : starts[w]) {
        events.push_back({{"ph", "X"}, {"name", "forward"}, {"pid", w}, {"tid", 0}, {"ts", t * 1e6}, {"dur", 1}});
      }
    }
    std::ofstream(dir / "trace.json") << nlohmann::json{{"traceEvents", events}}.dump();
  };
  // No epoch ends inside the run (8 steps, half an epoch).
  nlohmann::json summary = {
      {"workers", 2}, {"batch_size", 10}, {"steps", 8}, {"epochs", 0.5}, {"samples_per_second", 1.0}};
  // Worker 0 stops after 4 s; worker 1 takes 1 s per iteration beside it and 0.5 s alone.
  write_trace({{0, 1, 2, 3, 4}, {0, 1, 2, 3, 4, 4.5, 5, 5.5, 6}});
  auto steady = experiment::steady_throughput(dir.str(), summary, 1);
  EXPECT_NEAR(steady.per_worker[1], 10, 1e-9);  // its whole run would say 10 * 7 / 5 = 14
  EXPECT_NEAR(steady.samples_per_second, 20, 1e-9);
  EXPECT_EQ(steady.timed_iterations, 3);
  EXPECT_EQ(steady.workers_timed_past_the_others, 0);

  // A third worker ten times slower has not finished its warm-up iteration when worker 0 stops.
  summary["workers"] = 3;
  write_trace({{0, 1, 2, 3, 4}, {0, 1, 2, 3, 4, 4.5, 5, 5.5, 6}, {0, 10, 20, 30}});
  steady = experiment::steady_throughput(dir.str(), summary, 1);
  ASSERT_EQ(steady.per_worker.size(), 3u);
  EXPECT_NEAR(steady.per_worker[0], 10, 1e-9);
  EXPECT_NEAR(steady.per_worker[2], 1, 1e-9);
  EXPECT_EQ(steady.workers_timed_past_the_others, 1);
  EXPECT_EQ(steady.timed_iterations, 2);
}

// --repeats: every configuration runs that many times; its measurement is their median, its other figures the run's
// of the median, and every repeat's measurement is beside it (each from its own trace).
TEST(ValidateCommand, RepeatsAreMeasuredByTheirMedian) {
  TempDir dir;
  const std::string out = dir / "v";
  std::string grid = kGrid;
  grid.replace(grid.find("arsgd,asp"), 9, "arsgd");
  auto r = run_distsgd(grid + out + " --repeats 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("validate: 3 cells, 3 done, 0 failed"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("measured: the median of 3 repeats; a single run is "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("running repeat 3, loopback, workers=2, none, arsgd"), std::string::npos) << r.output;
  const auto rows = read_json(out + "/validation.json")["rows"];
  ASSERT_EQ(rows.size(), 1u);
  const auto& row = rows[0];
  ASSERT_EQ(row["measured_repeats"].size(), 3u) << row.dump();
  ASSERT_EQ(row["run_dirs"].size(), 3u) << row.dump();
  std::vector<double> measured;
  for (size_t i = 0; i < 3; ++i) {
    const std::string run_dir = row["run_dirs"][i];
    EXPECT_NE(run_dir.find("repeat=repeat-" + std::to_string(i + 1) + "_"), std::string::npos) << run_dir;
    const double x = row["measured_repeats"][i];
    EXPECT_NEAR(x, steady_from_trace(run_dir, 5), 1e-4 * x) << run_dir;
    measured.push_back(x);
  }
  std::sort(measured.begin(), measured.end());
  EXPECT_DOUBLE_EQ(row["measured_samples_per_second"].get<double>(), measured[1]);
  // The row's run is the median's: its own trace gives the median.
  EXPECT_NEAR(steady_from_trace(row["run_dir"], 5), measured[1], 1e-4 * measured[1]);
  EXPECT_EQ(row["status"], "trained");
}

// The host's hand-over per collective step: commbench's allreduce at every worker count of the grid gives each
// count's step beyond the fewest processes' (collective_handover), which every network's cluster of the grid takes and
// the held-out calibration keeps, so the 3-worker row is predicted with 3 ranks' hand-over.
TEST(ValidateCommand, EveryClusterTakesTheHostsHandOverAtEachWorkerCount) {
  TempDir dir;
  const std::string out = dir / "v";
  const auto r = run_distsgd(
      "validate --model lenet5 --dataset synthetic --synthetic-train-size 2048 --synthetic-test-size 64 "
      "--algos arsgd,gosgd --workers 2,3 --networks loopback --iterations 30 --warmup 5 --profile-repeats 3 "
      "--fidelity analytical --holdout --out " +
      out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("validate: a collective step on this host's shared cores costs, beyond 2 ranks', +"),
            std::string::npos)
      << r.output;
  std::vector<sim::AllreduceFit> fits;
  for (const int workers : {2, 3}) {
    fits.push_back(sim::load_cluster(out + "/clusters/loopback-w" + std::to_string(workers) + ".json").allreduce_fit);
  }
  const auto expected = sim::collective_handover_from_fits(fits);
  ASSERT_EQ(expected.size(), 2u);
  for (const std::string file :
       {"/clusters/loopback-host-w2.json", "/clusters/loopback-host-w3.json", "/holdout-loopback.json"}) {
    const auto handover = sim::load_cluster(out + file).collective_handover;
    ASSERT_EQ(handover.size(), 2u) << file;
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(handover[i].ranks, expected[i].ranks) << file;
      EXPECT_DOUBLE_EQ(handover[i].seconds, expected[i].seconds) << file;
    }
  }
  // The rows name the cluster with the host's figures.
  const auto validation = nlohmann::json::parse(read_file(out + "/validation.json"));
  for (const auto& row : validation["rows"]) {
    EXPECT_NE(row["cluster"].get<std::string>().find("loopback-host-w"), std::string::npos) << row.dump();
  }

  // The held-out calibration takes the communication's CPU per byte from the calibration runs' threads besides the
  // training thread (a least-squares line over their workers against twice the bytes each sent), not from the fit.
  // The line through the 2-worker runs' workers, computed here from their summaries.
  std::vector<std::pair<double, double>> points;
  for (const auto& row : validation["rows"]) {
    if (row["workers"].get<int64_t>() != 2) continue;
    const auto summary = nlohmann::json::parse(read_file(row["run_dir"].get<std::string>() + "/summary.json"));
    for (const auto& worker : summary["per_worker"]) {
      points.emplace_back(2 * worker["bytes_sent"].get<double>() / worker["steps"].get<double>(),
                          worker["cpu_after_warmup"]["other_threads_seconds_per_iteration"].get<double>());
    }
  }
  ASSERT_EQ(points.size(), 4u);
  double mean_x = 0, mean_y = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : points) mean_x += x / 4, mean_y += y / 4;
  for (const auto& [x, y] : points) sxx += (x - mean_x) * (x - mean_x), sxy += (x - mean_x) * (y - mean_y);
  ASSERT_GT(sxx, 0) << "arsgd and gosgd send different bytes";
  const auto& network = validation["holdout"]["networks"]["loopback"];
  const auto& unknown = network["unknowns"]["communication_cpu"];
  if (sxy > 0) {
    ASSERT_TRUE(network.contains("measured_communication_cpu")) << network.dump();
    EXPECT_NEAR(network["measured_communication_cpu"]["seconds_per_byte"].get<double>(), sxy / sxx, 1e-9 * sxy / sxx);
    EXPECT_EQ(network["measured_communication_cpu"]["workers"].get<int64_t>(), 4);
    EXPECT_FALSE(unknown["fitted"].get<bool>()) << unknown;
    EXPECT_EQ(unknown["note"].get<std::string>(), "measured, not fitted");
    EXPECT_DOUBLE_EQ(sim::load_cluster(out + "/holdout-loopback.json").communication_cpu_seconds_per_byte,
                     network["measured_communication_cpu"]["seconds_per_byte"].get<double>());
    EXPECT_NE(r.output.find("communication_cpu measured, not fitted: "), std::string::npos) << r.output;
  } else {
    // A line that does not rise measures nothing: the figure is left to the fit as before.
    EXPECT_FALSE(network.contains("measured_communication_cpu")) << network.dump();
  }
  // And the compute's CPU: the median of those workers' training threads, over the profile's compute, in the cluster
  // the held-out rows are predicted on.
  std::vector<double> training;
  for (const auto& row : validation["rows"]) {
    if (row["workers"].get<int64_t>() != 2) continue;
    const auto summary = nlohmann::json::parse(read_file(row["run_dir"].get<std::string>() + "/summary.json"));
    for (const auto& worker : summary["per_worker"]) {
      training.push_back(worker["cpu_after_warmup"]["training_thread_seconds_per_iteration"].get<double>());
    }
  }
  ASSERT_EQ(training.size(), 4u);
  std::sort(training.begin(), training.end());
  const double median = (training[1] + training[2]) / 2;
  ASSERT_TRUE(network.contains("measured_compute_cpu")) << network.dump();
  EXPECT_NEAR(network["measured_compute_cpu"]["seconds"].get<double>(), median, 1e-12);
  EXPECT_DOUBLE_EQ(sim::load_cluster(out + "/holdout-loopback.json").compute_cpu_scale,
                   network["measured_compute_cpu"]["scale"].get<double>());
  EXPECT_NE(r.output.find("compute's CPU measured: "), std::string::npos) << r.output;
}

TEST(ValidateCommand, BadFlagsAreOneClearError) {
  TempDir dir;
  const std::string out = " --out " + (dir / "v");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--algos arsgd,foo", "--algos: unknown algorithm 'foo' (expected arsgd, arsgd-powersgd, bsp"},
      {"--algos arsgd,arsgd", "--algos: 'arsgd' is listed twice"},
      {"--workers 1", "--workers: validation needs at least 2 workers per run, got 1"},
      {"--workers 2 --straggler 3:4", "--straggler 3:4: rank 3 is not a worker of the 2-worker runs"},
      {"--straggler 1x4", "--straggler: expected none or RANK:FACTOR (e.g. 1:4), got '1x4'"},
      {"--networks loopback,10foo", "--networks"},
      {"--networks loopback,7mbit", "--networks 7mbit: the simulator has no preset emulated-7mbit"},
      {"--fidelity exact", "--fidelity: expected analytical or des, got 'exact'"},
      {"--iterations 10 --warmup 5", "--iterations must exceed --warmup"},
      {"--repeats 0", "--repeats must be at least 1, got 0"},
      {"--holdout --noise 1.5", "--noise: Value 1.5 not in range"},
      {"--holdout --holdout-fidelity exact", "--holdout-fidelity: exact not in {analytical,des}"},
      {"--holdout --workers 4,4", "--holdout calibrates on the smallest worker count and scores the others"},
      {"--holdout --workers 4 --straggler 3:2", "--holdout calibrates on rows without a straggler"},
      {"--networks loopback --cluster 1gbit=emulated-1gbit", "--cluster 1gbit=emulated-1gbit: '1gbit' is not one"},
      {"--networks loopback --cluster loopback=missing.json", "missing.json"},
  };
  for (const auto& [flags, message] : cases) {
    auto r = run_distsgd("validate " + flags + out);
    EXPECT_EQ(r.exit_code, 1) << flags << "\n" << r.output;
    EXPECT_EQ(r.output.rfind("distsgd: error: ", 0), 0u) << flags << "\n" << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << flags << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << flags << "\n" << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "v"));  // nothing ran
}

// A variant of an algorithm is a method of its own in --algos: AR-SGD with PowerSGD trains and is simulated with its
// compression flags, under its own name.
TEST(ValidateCommand, PowerSgdIsAMethodOfItsOwn) {
  const auto recipes = experiment::recipes_for({"arsgd", "arsgd-powersgd"}, "--algos");
  ASSERT_EQ(recipes.size(), 2u);
  EXPECT_EQ(recipes[1].name(), "arsgd-powersgd");
  EXPECT_EQ(recipes[1].algorithm, "arsgd");
  const auto train = experiment::train_flags_of(recipes[1], 1);
  const std::vector<std::string> expected{"--algo", "arsgd", "--overlap",        "none", "--compress", "powersgd",
                                          "--rank", "2",     "--powersgd-start", "10"};
  EXPECT_EQ(train, expected);
  EXPECT_EQ(experiment::simulate_flags_of(recipes[1], 1), expected) << "every flag reaches the simulator";
  const auto names = experiment::recipe_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "arsgd-powersgd"), names.end());
  // SlowMo over SGP likewise, its --base reaching the simulator.
  const auto over_sgp = experiment::recipes_for({"slowmo-sgp"}, "--algos");
  ASSERT_EQ(over_sgp.size(), 1u);
  EXPECT_EQ(over_sgp[0].algorithm, "slowmo");
  const auto simulated = experiment::simulate_flags_of(over_sgp[0], 1);
  const std::vector<std::string> base{"--base", "sgp"};
  EXPECT_NE(std::search(simulated.begin(), simulated.end(), base.begin(), base.end()), simulated.end());
}

// Processes whose command line mentions `text` (other than this test's own shell).
std::vector<int> processes_mentioning(const std::string& text) {
  std::vector<int> pids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = read_file(entry.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(text) != std::string::npos && cmdline.find("/bin/sh") == std::string::npos) {
      pids.push_back(std::stoi(name));
    }
  }
  return pids;
}

// Starts a validate whose training runs for minutes, and waits until its train command (and ranks) run.
int start_long_validate(const std::string& out) {
  const auto r = distsgd::testing::run_shell(
      std::string(DISTSGD_BINARY) +
      " validate --model mlp --mlp-width 16 --dataset synthetic --algos arsgd --workers 2 --networks loopback "
      "--iterations 1000000 --warmup 5 --profile-repeats 3 --fidelity analytical --out " +
      out + " > " + out + ".log 2>&1 & echo $!");
  const int pid = std::stoi(r.output);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(180);
  while (std::chrono::steady_clock::now() < deadline) {
    for (int p : processes_mentioning(out + "/cells/")) {
      if (read_file("/proc/" + std::to_string(p) + "/cmdline").find("train") != std::string::npos) return pid;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ADD_FAILURE() << "validate never started its training run:\n" << read_file(out + ".log");
  return pid;
}

bool none_left(const std::string& out, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (processes_mentioning(out).empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return processes_mentioning(out).empty();
}

// Interrupting validate stops its training run, launcher and ranks, and says so; killing it (-9) takes them along.
TEST(ValidateCommand, ItsChildrenEndWithIt) {
  TempDir dir;
  const std::string interrupted = dir / "interrupted";
  const int first = start_long_validate(interrupted);
  ::kill(first, SIGINT);
  EXPECT_TRUE(none_left(interrupted, 30)) << "processes left after SIGINT";
  EXPECT_NE(read_file(interrupted + ".log").find("distsgd: error: interrupted: stopped distsgd train"),
            std::string::npos)
      << read_file(interrupted + ".log");

  const std::string killed = dir / "killed";
  const int second = start_long_validate(killed);
  ::kill(second, SIGKILL);
  EXPECT_TRUE(none_left(killed, 30)) << "processes left after SIGKILL";
}

}  // namespace
}  // namespace distsgd::testing
