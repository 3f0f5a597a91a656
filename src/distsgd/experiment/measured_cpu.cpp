#include "distsgd/experiment/measured_cpu.hpp"

#include <algorithm>
#include <utility>

#include "distsgd/core/json_file.hpp"

namespace distsgd::experiment {
namespace {
constexpr double kLeastByteSpread = 2;  // the most bytes a worker sent per iteration over the fewest, at least
}  // namespace

std::optional<MeasuredCommunicationCpu> measured_communication_cpu(const std::vector<std::string>& run_dirs) {
  std::vector<std::pair<double, double>> points;  // (2 x bytes sent per iteration, CPU per iteration elsewhere)
  for (const auto& dir : run_dirs) {
    const auto summary = read_json_file_if_valid(dir + "/summary.json");
    if (!summary || !summary->contains("per_worker")) continue;
    for (const auto& worker : (*summary)["per_worker"]) {
      const auto after = worker.find("cpu_after_warmup");
      const double steps = worker.value("steps", 0.0);
      if (after == worker.end() || !after->is_object() || steps <= 0) continue;
      const auto other = after->find("other_threads_seconds_per_iteration");
      if (other == after->end() || !other->is_number()) continue;
      points.emplace_back(2 * worker.value("bytes_sent", 0.0) / steps, other->get<double>());
    }
  }
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
  for (const auto& dir : run_dirs) {
    const auto summary = read_json_file_if_valid(dir + "/summary.json");
    if (!summary || !summary->contains("per_worker")) continue;
    for (const auto& worker : (*summary)["per_worker"]) {
      const auto after = worker.find("cpu_after_warmup");
      if (after == worker.end() || !after->is_object()) continue;
      const auto training = after->find("training_thread_seconds_per_iteration");
      if (training != after->end() && training->is_number() && training->get<double>() > 0) {
        seconds.push_back(training->get<double>());
      }
    }
  }
  if (seconds.empty() || profile_compute_seconds <= 0) return std::nullopt;
  const auto middle = seconds.begin() + static_cast<std::ptrdiff_t>(seconds.size() / 2);
  std::nth_element(seconds.begin(), middle, seconds.end());
  double median = *middle;
  if (seconds.size() % 2 == 0) median = (median + *std::max_element(seconds.begin(), middle)) / 2;
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
