#include "distsgd/sim/calibration/measured_point_model.hpp"

#include <algorithm>
#include <memory>
#include <thread>

#include "distsgd/core/error.hpp"
#include "distsgd/core/host_cores.hpp"
#include "distsgd/sim/algorithm_predictions.hpp"
#include "distsgd/sim/simulation.hpp"
#include "distsgd/sim/simulator_settings.hpp"

namespace distsgd::sim {
namespace {

// The point's settings as the simulator takes them (`fidelity`'s words first); the flags it does not take are
// collected in `ignored`.
SimulatorSettings settings_of(const MeasuredPoint& p, const std::vector<std::string>& fidelity,
                              std::set<std::string>& ignored) {
  const bool des = !fidelity.empty();
  std::vector<std::string> words = fidelity;
  words.insert(words.end(), {"--algo", p.algorithm});
  for (size_t i = 0; i < p.flags.size();) {
    const std::string& flag = p.flags[i];
    size_t end = i + 1;
    while (end < p.flags.size() && p.flags[end].rfind("--", 0) != 0) ++end;
    require(flag.rfind("--", 0) == 0, p.origin + ": flags: '" + flag + "' is not a flag");
    if (flag == "--slowdown" && !des) {
      throw Error(p.origin +
                  ": --slowdown: calibrate fits homogeneous runs (the analytical models have no "
                  "stragglers); leave the slowed runs out, or calibrate with --fidelity des");
    }
    if (is_point_setting(flag)) {
      words.insert(words.end(), p.flags.begin() + static_cast<std::ptrdiff_t>(i),
                   p.flags.begin() + static_cast<std::ptrdiff_t>(end));
    } else {
      ignored.insert(flag);
    }
    i = end;
  }
  try {
    return simulator_settings_from(words);
  } catch (const Error& e) {
    throw Error(p.origin + ": " + e.what());
  }
}

}  // namespace

bool is_point_setting(const std::string& flag) {
  static const std::set<std::string> where_and_how{"--algo",         "--workers",         "--profile", "--cluster",
                                                   "--out",          "--trace",           "--seed",    "--fidelity",
                                                   "--shared-cores", "--server-placement"};
  return simulator_takes_flag(flag) && !where_and_how.count(flag);
}

ThroughputModel analytical_model_of(const std::vector<MeasuredPoint>& points, const std::vector<ModelProfile>& profiles,
                                    std::set<std::string>& ignored) {
  require(points.size() == profiles.size(), "analytical_model_of: a profile per point");
  std::vector<SimulatorSettings> settings;
  for (const auto& p : points) settings.push_back(settings_of(p, {}, ignored));
  // A point's bytes per iteration (for the communication's CPU on shared cores) do not depend on the cluster's
  // figures: counted once, when a cluster first needs them.
  auto bytes = std::make_shared<std::vector<double>>(points.size(), -1.0);
  return [&points, settings, profiles, bytes](const MeasuredPoint& p, const ClusterDescription& cluster) {
    const auto i = static_cast<size_t>(&p - points.data());
    double& sent = bytes->at(i);
    if (sent < 0 && charges_communication_cpu(cluster, p.workers)) {
      sent = communication_bytes_per_iteration(settings.at(i), profiles.at(i), cluster, p.workers);
    }
    return predict_analytical(settings.at(i), profiles.at(i), cluster, p.workers, sent).samples_per_second;
  };
}

void search_as_for_des(CalibrationRequest& request) {
  request.threads = host_cores();
  request.resolution = 1e-6;
  request.corner_starts = 2;
  request.range_halvings = 6;
}

ThroughputModel des_model_of(const std::vector<MeasuredPoint>& points, const std::vector<ModelProfile>& profiles,
                             std::set<std::string>& ignored, const DesPointOptions& options) {
  require(points.size() == profiles.size(), "des_model_of: a profile per point");
  const std::vector<std::string> fidelity{"--fidelity",   "des",
                                          "--iterations", std::to_string(options.iterations),
                                          "--warmup",     std::to_string(options.warmup),
                                          "--seed",       std::to_string(options.seed)};
  std::vector<SimulatorSettings> settings;
  for (const auto& p : points) settings.push_back(settings_of(p, fidelity, ignored));
  return [&points, settings, profiles](const MeasuredPoint& p, const ClusterDescription& cluster) {
    const auto i = static_cast<size_t>(&p - points.data());
    return des_samples_per_second(settings.at(i), profiles.at(i), cluster, p.workers);
  };
}

}  // namespace distsgd::sim
