#include "distsgd/experiment/run_directory.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <tuple>
#include <utility>

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"

namespace distsgd::experiment {

std::optional<nlohmann::json> finished_summary(const std::string& run_dir) {
  auto summary = read_json_file_if_valid(run_dir + "/summary.json");
  if (!summary || !summary->is_object()) return std::nullopt;
  for (const char* key : {"samples_per_second", "steps", "epochs", "workers", "batch_size"}) {
    if (!summary->contains(key) || !(*summary)[key].is_number()) return std::nullopt;
  }
  return summary;
}

std::vector<nlohmann::json> evaluation_records(const std::string& run_dir) {
  std::vector<nlohmann::json> records;
  std::ifstream in(run_dir + "/metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!record.is_discarded() && record.is_object()) records.push_back(std::move(record));
  }
  return records;
}

SteadyThroughput steady_throughput(const std::string& run_dir, const nlohmann::json& summary, int64_t warmup) {
  const std::string path = run_dir + "/trace.json";
  const auto trace = read_json_file_if_valid(path);
  require(trace && trace->contains("traceEvents"), path + ": missing or not a trace (the run needs --trace)");
  const auto workers = summary.at("workers").get<int64_t>();
  const auto batch = summary.at("batch_size").get<double>();
  // summary.json's epochs is steps / steps_per_epoch.
  const double epochs = summary.at("epochs").get<double>();
  const int64_t steps_per_epoch =
      epochs > 0 ? std::llround(summary.at("steps").get<double>() / epochs) : std::numeric_limits<int64_t>::max();

  // Start of every forward pass of each worker (ranks 0..W-1 are the workers; their compute row is tid 0).
  std::vector<std::vector<double>> starts(static_cast<size_t>(workers));
  for (const auto& event : (*trace)["traceEvents"]) {
    if (event.value("ph", "") != "X" || event.value("name", "") != "forward" || event.value("tid", -1) != 0) continue;
    const int64_t rank = event.value("pid", -1);
    if (rank >= 0 && rank < workers) starts[static_cast<size_t>(rank)].push_back(event.at("ts").get<double>() * 1e-6);
  }
  // Every worker's iterations are timed only while every worker is still training: on a host whose cores the
  // ranks share, the workers that outlast the first one to stop run faster than before (fewer ranks on the cores),
  // and asynchronous workers drift apart by 5-30% of a run, so their own whole windows overstate what they did
  // together by up to 13% (bench/README, "Timed while every worker trains"). The window ends where the first worker
  // starts its last iteration.
  double everyone_training_until = std::numeric_limits<double>::infinity();
  for (auto& s : starts) {
    std::sort(s.begin(), s.end());
    if (!s.empty()) everyone_training_until = std::min(everyone_training_until, s.back());
  }
  SteadyThroughput result;
  result.warmup_iterations = warmup;
  result.timed_iterations = std::numeric_limits<int64_t>::max();
  for (int64_t w = 0; w < workers; ++w) {
    const auto& s = starts[static_cast<size_t>(w)];
    // Iteration k runs from the start of its forward pass to the start of the next one; the epoch ends after
    // iteration k when (k + 1) % steps_per_epoch == 0, and an evaluation follows.
    const auto time_iterations = [&](double until) {
      std::pair<double, int64_t> seconds_and_count{0, 0};
      for (int64_t k = warmup; k + 1 < static_cast<int64_t>(s.size()); ++k) {
        if (s[static_cast<size_t>(k + 1)] > until) break;
        if ((k + 1) % steps_per_epoch == 0) continue;
        seconds_and_count.first += s[static_cast<size_t>(k + 1)] - s[static_cast<size_t>(k)];
        ++seconds_and_count.second;
      }
      return seconds_and_count;
    };
    auto [seconds, timed] = time_iterations(everyone_training_until);
    // A worker still warming up when the first one stopped (a straggler many times slower than the others, beside
    // asynchronous workers that do not wait for it) has nothing in that window: its own iterations time it.
    if (timed == 0) {
      std::tie(seconds, timed) = time_iterations(std::numeric_limits<double>::infinity());
      ++result.workers_timed_past_the_others;
    }
    require(timed >= 1 && seconds > 0, path + ": worker " + std::to_string(w) + " has " + std::to_string(s.size()) +
                                           " forward passes, too few to time any after a warm-up of " +
                                           std::to_string(warmup) + " (lower --warmup)");
    const double rate = batch * static_cast<double>(timed) / seconds;
    result.per_worker.push_back(rate);
    result.samples_per_second += rate;
    result.timed_iterations = std::min(result.timed_iterations, timed);
  }
  return result;
}

}  // namespace distsgd::experiment
