// The CPU of a host whose cores the ranks share, measured from runs rather than fitted to their throughput: the
// communication's per byte moved (bench/README, session 42: fitted beside the compute it came out twice what the
// runs' communication threads spend, 3.6 against 1.7 ns per byte on loopback, and spread the algorithms apart at 8
// workers where their CPU per iteration is alike) and the compute's (session 44: a compute_scale fitted at 2 workers
// was 1.55-1.87, where the training threads spend 1.2-1.4 times the profile's compute).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "distsgd/sim/calibration/calibration.hpp"

namespace distsgd::experiment {

struct MeasuredCommunicationCpu {
  double seconds_per_byte = 0;  // ClusterDescription::communication_cpu_seconds_per_byte's convention
  int64_t workers = 0;          // the points of the line: every worker of every run
};

// Over the runs' workers (summary.json), the CPU per iteration outside the training thread (cpu_after_warmup: the
// communication, loader and keep-alive threads) against twice the bytes sent per iteration (a byte sent and one
// received), the slope of a least-squares line; its intercept is the loader's and keep-alive's share. Empty where the
// runs lack the figures (a run before they were recorded, a virtual run), where the most bytes a worker sent per
// iteration are less than twice the fewest, or where the line does not rise. A run directory without a readable
// summary.json is skipped.
std::optional<MeasuredCommunicationCpu> measured_communication_cpu(const std::vector<std::string>& run_dirs);

// Where the request's base shares the host's cores and the runs measure the figure: puts it in the base and keeps the
// automatic choice from fitting it (calibrate --runs, validate --holdout). Returns what it measured.
std::optional<MeasuredCommunicationCpu> hold_measured_communication_cpu(sim::CalibrationRequest& request,
                                                                        const std::vector<std::string>& run_dirs);

// {"seconds_per_byte", "workers"}: the calibration reports' measured_communication_cpu.
nlohmann::json to_json(const MeasuredCommunicationCpu& measured);

struct MeasuredComputeCpu {
  double seconds = 0;  // the training thread's CPU per iteration, the median over the workers
  double scale = 0;    // over the profile's compute: ClusterDescription::compute_cpu_scale
  int64_t workers = 0;
};

// Over the runs' workers (summary.json, cpu_after_warmup), the median of the training thread's CPU per iteration,
// and its ratio to `profile_compute_seconds` (the profile's forward, backward and update). Empty where no worker has
// the figure or the profile has no compute.
std::optional<MeasuredComputeCpu> measured_compute_cpu(const std::vector<std::string>& run_dirs,
                                                       double profile_compute_seconds);

// Where the request's base shares the host's cores and the runs measure the figure: puts its scale in the base
// (calibrate --runs, validate --holdout). Returns what it measured.
std::optional<MeasuredComputeCpu> hold_measured_compute_cpu(sim::CalibrationRequest& request,
                                                            const std::vector<std::string>& run_dirs,
                                                            double profile_compute_seconds);

// {"seconds", "scale", "workers"}: the calibration reports' measured_compute_cpu.
nlohmann::json to_json(const MeasuredComputeCpu& measured);

}  // namespace distsgd::experiment
