#include "distsgd/experiment/measured_cpu.hpp"

#include <algorithm>
#include <functional>
#include <utility>

#include "distsgd/core/json_file.hpp"
#include "distsgd/sim/calibration/holdout.hpp"

namespace distsgd::experiment {
namespace {
constexpr double kLeastByteSpread = 2;  // the most bytes a worker sent per iteration over the fewest, at least

// Calls each(worker, value) for every worker of the runs (summary.json) whose cpu_after_warmup holds `figure` as a
// number. A run directory without a readable summary.json, and a worker without the figure, are skipped.
void for_each_cpu_figure(const std::vector<std::string>& run_dirs, const char* figure,
                         const std::function<void(const nlohmann::json& worker, double value)>& each) {
  for (const auto& dir : run_dirs) {
    const auto summary = read_json_file_if_valid(dir + "/summary.json");
    if (!summary || !summary->contains("per_worker")) continue;
    for (const auto& worker : (*summary)["per_worker"]) {
      const auto after = worker.find("cpu_after_warmup");
      if (after == worker.end() || !after->is_object()) continue;
      const auto value = after->find(figure);
      if (value != after->end() && value->is_number()) each(worker, value->get<double>());
    }
  }
}
}  // namespace

std::optional<MeasuredCommunicationCpu> measured_communication_cpu(const std::vector<std::string>& run_dirs) {
  std::vector<std::pair<double, double>> points;  // (2 x bytes sent per iteration, CPU per iteration elsewhere)
  for_each_cpu_figure(run_dirs, "other_threads_seconds_per_iteration", [&](const nlohmann::json& worker, double other) {
    const double steps = worker.value("steps", 0.0);
    if (steps > 0) points.emplace_back(2 * worker.value("bytes_sent", 0.0) / steps, other);
  });
  if (points.size() < 2) return std::nullopt;
  // A slope needs bytes that differ: over runs that all send about as much, an algorithm whose other threads also
  // compute (AR-SGD's overlapped allreduce adds the gradients there) would set it alone (7.3 ns per byte from four
  // algorithms at 247-370 KB, bench/README, session 42).
  const auto [fewest, most] = std::minmax_element(points.begin(), points.end());
  if (most->first < kLeastByteSpread * fewest->first) return std::nullopt;
  const auto n = static_cast<double>(points.size());
  double mean_x = 0, mean_y = 0;
  for (const auto& [x, y] : points) {
    mean_x += x / n;
    mean_y += y / n;
  }
  double sxx = 0, sxy = 0;
  for (const auto& [x, y] : points) {
    sxx += (x - mean_x) * (x - mean_x);
    sxy += (x - mean_x) * (y - mean_y);
  }
  if (sxx <= 0 || sxy <= 0) return std::nullopt;
  return MeasuredCommunicationCpu{sxy / sxx, static_cast<int64_t>(points.size())};
}

std::optional<MeasuredCommunicationCpu> hold_measured_communication_cpu(sim::CalibrationRequest& request,
                                                                        const std::vector<std::string>& run_dirs) {
  if (request.base.shared_cores <= 0) return std::nullopt;
  const auto measured = measured_communication_cpu(run_dirs);
  if (measured) {
    request.base.communication_cpu_seconds_per_byte = measured->seconds_per_byte;
    request.measured.push_back(sim::Unknown::kCommunicationCpu);
  }
  return measured;
}

nlohmann::json to_json(const MeasuredCommunicationCpu& measured) {
  return {{"seconds_per_byte", measured.seconds_per_byte}, {"workers", measured.workers}};
}

std::optional<MeasuredComputeCpu> measured_compute_cpu(const std::vector<std::string>& run_dirs,
                                                       double profile_compute_seconds) {
  std::vector<double> seconds;
  for_each_cpu_figure(run_dirs, "training_thread_seconds_per_iteration", [&](const nlohmann::json&, double training) {
    if (training > 0) seconds.push_back(training);
  });
  if (seconds.empty() || profile_compute_seconds <= 0) return std::nullopt;
  const double median = sim::median_of(seconds);
  return MeasuredComputeCpu{median, median / profile_compute_seconds, static_cast<int64_t>(seconds.size())};
}

std::optional<MeasuredComputeCpu> hold_measured_compute_cpu(sim::CalibrationRequest& request,
                                                            const std::vector<std::string>& run_dirs,
                                                            double profile_compute_seconds) {
  if (request.base.shared_cores <= 0) return std::nullopt;
  const auto measured = measured_compute_cpu(run_dirs, profile_compute_seconds);
  if (measured) request.base.compute_cpu_scale = measured->scale;
  return measured;
}

nlohmann::json to_json(const MeasuredComputeCpu& measured) {
  return {{"seconds", measured.seconds}, {"scale", measured.scale}, {"workers", measured.workers}};
}

}  // namespace distsgd::experiment
