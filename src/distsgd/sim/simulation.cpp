#include "distsgd/sim/simulation.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "distsgd/core/error.hpp"
#include "distsgd/sim/algorithm_predictions.hpp"
#include "distsgd/sim/des/discrete_event_simulator.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "distsgd/sim/platform/model_profile.hpp"

namespace distsgd::sim {
namespace {

// "server_in 93% (max 95%), node_out 40% ..." for the table.
std::string utilisation_line(const DesResult& r) {
  std::string line;
  for (const auto& u : r.utilisation) {
    char part[96];
    std::snprintf(part, sizeof part, "%s%s %.0f%% (max %.0f%%)", line.empty() ? "" : ", ", u.name.c_str(), 100 * u.mean,
                  100 * u.max);
    line += part;
  }
  return line;
}

std::string histogram_line(const std::map<int64_t, int64_t>& h) {
  std::string line;
  for (const auto& [value, count] : h) {
    line += (line.empty() ? "" : " ") + std::to_string(value) + ":" + std::to_string(count);
  }
  return line;
}

// One discrete-event run of `settings` on a cluster (the profile as run there, with its communication's CPU).
DesResult simulate_on(const SimulatorSettings& c, const ModelProfile& profile, const ClusterDescription& cluster,
                      const DesSettings& settings) {
  return simulate_discrete_events(
      charges_communication_cpu(cluster, settings.workers)
          ? with_communication_cpu(profile, cluster,
                                   communication_bytes_per_iteration(c, profile, cluster, settings.workers))
          : profile,
      cluster, settings);
}

// A calibrated cluster's others that fit its points as well (calibrate --noise), with the simulate's --shared-cores
// and --server-placement.
std::vector<ClusterDescription> consistent_clusters(const SimulatorSettings& c) {
  auto consistent = load_consistent_clusters(c.cluster);
  for (auto& other : consistent) other = as_simulated(other, c);
  return consistent;
}

// What the clusters that fit a calibration's points as well give (in the file's order), and the range they span with
// the best fit's figure.
struct ConsistentRates {
  std::vector<double> rates;
  double low = 0, high = 0;
  void add_to(nlohmann::json& row) const {
    row["samples_per_second_range"] = {low, high};
    row["samples_per_second_consistent"] = rates;
  }
};
template <typename RateOn>
ConsistentRates consistent_rates(const std::vector<ClusterDescription>& consistent, double best, RateOn rate_on) {
  ConsistentRates r{{}, best, best};
  for (const auto& other : consistent) {
    r.rates.push_back(rate_on(other));
    r.low = std::min(r.low, r.rates.back());
    r.high = std::max(r.high, r.rates.back());
  }
  return r;
}

// The simulated figures of every worker count, as a table and in JSON; with `consistent` clusters, the range of
// samples/s over them too (each simulated without a trace).
nlohmann::json run_discrete_events(const SimulatorSettings& c, const ModelProfile& measured_profile,
                                   const ClusterDescription& cluster, const std::vector<ClusterDescription>& consistent,
                                   std::ostream& table) {
  const auto profile = as_run_on(measured_profile, cluster);
  std::vector<DesSettings> runs;  // every count's settings checked before the first runs
  // A decentralized algorithm needs a peer: in a sweep, one worker is left out (as distsgd train refuses it).
  for (const int64_t workers : c.workers) {
    if (is_peer_to_peer(c) && workers == 1 && c.workers.size() > 1) continue;
    runs.push_back(des_settings(c, workers));
  }
  table << c.algorithm << variant_text(c) << ", " << profile.model << " batch " << profile.batch_size
        << " per worker, on " << cluster.name << " (" << cluster.source << "); discrete-event, " << c.iterations
        << " iterations after " << c.warmup << " of warm-up, seed " << c.seed << "\n"
        << "  workers  iteration_ms  p95_ms  samples/s  efficiency  exposed_comm_ms  MB_sent/iter\n";
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& settings : runs) {
    const auto r = simulate_on(c, profile, cluster, settings);
    char line[160];
    std::snprintf(line, sizeof line, "  %7lld  %12.3f  %6.3f  %9.0f  %9.1f%%  %15.3f  %12.3f\n",
                  static_cast<long long>(settings.workers), r.iteration_seconds * 1e3, r.p95_seconds * 1e3,
                  r.samples_per_second, 100 * r.scaling_efficiency, r.exposed_communication_seconds * 1e3,
                  r.bytes_per_worker / 1e6);
    table << line << "           utilisation: " << utilisation_line(r) << "\n";
    auto quiet = settings;
    quiet.trace_path.clear();
    const auto range = consistent_rates(consistent, r.samples_per_second, [&](const ClusterDescription& other) {
      return simulate_on(c, as_run_on(measured_profile, other), other, quiet).samples_per_second;
    });
    if (!consistent.empty()) {
      std::snprintf(line, sizeof line,
                    "           range: %.0f-%.0f samples/s over the %zu clusters that fit the calibration's points "
                    "within their noise\n",
                    range.low, range.high, consistent.size());
      table << line;
    }
    const bool peer_to_peer = r.servers == 0;
    if (!r.staleness.empty()) {
      table << (peer_to_peer ? "           age of merged models (iterations: merges): "
                             : "           staleness (server updates: gradients): ")
            << histogram_line(r.staleness) << "\n";
    }
    if (!r.clock_gap.empty()) {
      table << "           clock gap at each iteration's start (clocks: iterations): " << histogram_line(r.clock_gap)
            << "\n";
    }
    char simulated[160];
    std::snprintf(simulated, sizeof simulated, "           simulated %.3f s (%lld events) in %.3f s\n",
                  r.simulated_seconds, static_cast<long long>(r.events), r.wall_seconds);
    table << simulated;
    rows.push_back({{"workers", settings.workers},
                    {"iteration_seconds", r.iteration_seconds},
                    {"samples_per_second", r.samples_per_second},
                    {"scaling_efficiency", r.scaling_efficiency},
                    {"exposed_communication_seconds", r.exposed_communication_seconds},
                    {"des", to_json(r)}});
    if (!consistent.empty()) range.add_to(rows.back());
  }
  if (!c.trace.empty()) table << "trace: " << c.trace << "\n";
  table.flush();
  return rows;
}

}  // namespace

double des_samples_per_second(const SimulatorSettings& c, const ModelProfile& measured_profile,
                              const ClusterDescription& cluster, int64_t workers) {
  auto settings = des_settings(c, workers);
  settings.trace_path.clear();
  return simulate_on(c, as_run_on(measured_profile, cluster), cluster, settings).samples_per_second;
}

nlohmann::json run_simulation(const SimulatorSettings& c, std::ostream& table) {
  require(!c.profile.empty(), "simulate: --profile is required (a profile JSON written by distsgd profile)");
  check(c);  // every rule before any file is read
  const auto cluster = as_simulated(load_cluster(c.cluster), c);
  const auto measured_profile = load_model_profile(c.profile);
  const auto profile = as_run_on(measured_profile, cluster);
  const auto consistent = consistent_clusters(c);
  if (c.fidelity == "des") {
    const auto rows = run_discrete_events(c, measured_profile, cluster, consistent, table);
    return nlohmann::json{{"fidelity", "des"},
                          {"algorithm", c.algorithm},
                          {"overlap", c.overlap},
                          {"bucket_mb", c.bucket_mb},
                          {"first_bucket_mb", c.first_bucket_mb},
                          {"servers", c.servers},
                          {"sharding", c.sharding},
                          {"compress", c.compress},
                          {"density", c.density},
                          {"rank", c.rank},
                          {"powersgd_start", c.powersgd_start},
                          {"staleness", c.staleness},
                          {"tau", c.tau},
                          {"pi", c.pi},
                          {"aladdin_variant", c.aladdin_variant},
                          {"gossip_probability", c.gossip_probability},
                          {"gossip_mode", c.gossip_mode},
                          {"sgp_overlap", c.sgp_overlap},
                          {"sync_every", c.sync_every},
                          {"base", c.slowmo_base},
                          {"iterations", c.iterations},
                          {"warmup", c.warmup},
                          {"seed", c.seed},
                          {"prefetch", c.prefetch},
                          {"collectives", c.collectives},
                          {"heterogeneity",
                           {{"slowdowns", c.slowdowns},
                            {"compute_multipliers", c.compute_multipliers},
                            {"link_multipliers", c.link_multipliers},
                            {"jitter_cv", c.jitter_cv},
                            {"jitter", c.jitter},
                            {"straggler_probability", c.straggler_probability},
                            {"straggler_factor", c.straggler_factor},
                            {"straggler_iterations", c.straggler_iterations}}},
                          {"profile", c.profile},
                          {"cluster", to_json(cluster)},
                          {"predictions", rows}};
  }

  nlohmann::json rows = nlohmann::json::array();
  table << c.algorithm << variant_text(c) << ", " << profile.model << " batch " << profile.batch_size
        << " per worker, on " << cluster.name << " (" << cluster.source << "); analytical\n";
  if (!consistent.empty()) {
    table << "  range: samples/s over the " << consistent.size()
          << " clusters that fit the calibration's points within their noise (distsgd calibrate --noise)\n";
  }
  table << "  workers  iteration_ms  samples/s  efficiency  exposed_comm_ms" << (consistent.empty() ? "" : "  range")
        << "\n";
  for (const int64_t workers : c.workers) {
    const auto p = predict_analytical(c, measured_profile, cluster, workers);
    char line[160];
    std::snprintf(line, sizeof line, "  %7lld  %12.3f  %9.0f  %9.1f%%  %15.3f", static_cast<long long>(workers),
                  p.iteration_seconds * 1e3, p.samples_per_second, 100 * p.scaling_efficiency,
                  p.exposed_communication_seconds * 1e3);
    table << line;
    nlohmann::json row = {{"workers", workers},
                          {"iteration_seconds", p.iteration_seconds},
                          {"samples_per_second", p.samples_per_second},
                          {"scaling_efficiency", p.scaling_efficiency},
                          {"exposed_communication_seconds", p.exposed_communication_seconds}};
    if (!consistent.empty()) {
      const auto range = consistent_rates(consistent, p.samples_per_second, [&](const ClusterDescription& other) {
        return predict_analytical(c, measured_profile, other, workers).samples_per_second;
      });
      range.add_to(row);
      std::snprintf(line, sizeof line, "  %.0f-%.0f", range.low, range.high);
      table << line;
    }
    table << "\n";
    rows.push_back(row);
  }
  table.flush();
  return nlohmann::json{{"fidelity", "analytical"},
                        {"algorithm", c.algorithm},
                        {"overlap", c.overlap},
                        {"bucket_mb", c.bucket_mb},
                        {"first_bucket_mb", c.first_bucket_mb},
                        {"servers", c.servers},
                        {"staleness", c.staleness},
                        {"tau", c.tau},
                        {"pi", c.pi},
                        {"profile", c.profile},
                        {"cluster", to_json(cluster)},
                        {"predictions", rows}};
}

}  // namespace distsgd::sim
