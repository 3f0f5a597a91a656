#include "distsgd/cli/simulate_command.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/sim/asynchronous_model.hpp"
#include "distsgd/sim/cluster_description.hpp"
#include "distsgd/sim/decentralized_model.hpp"
#include "distsgd/sim/model_profile.hpp"
#include "distsgd/sim/synchronous_model.hpp"

namespace distsgd::cli {
namespace {

constexpr double kMB = 1e6;  // as --bucket-mb of distsgd train

sim::Prediction predict(const SimulateCommand& c, const sim::ModelProfile& profile,
                        const sim::ClusterDescription& cluster, int64_t workers) {
  if (c.algorithm == "arsgd") {
    return sim::predict_allreduce_sgd(profile, workers, cluster.allreduce_cost(),
                                      {c.overlap == "wfbp", c.bucket_mb * kMB, c.first_bucket_mb * kMB});
  }
  if (c.algorithm == "asp") return sim::predict_asp(profile, workers, c.servers, cluster);
  if (c.algorithm == "ssp") return sim::predict_ssp(profile, workers, c.servers, c.staleness, cluster);
  if (c.algorithm == "easgd") return sim::predict_easgd(profile, workers, c.servers, c.tau, cluster);
  if (c.algorithm == "aladdin") return sim::predict_aladdin(profile, workers, c.servers, c.pi, cluster);
  if (c.algorithm == "gosgd") return sim::predict_gosgd(profile, workers, c.gossip_probability, cluster);
  if (c.algorithm == "gossip") return sim::predict_gossip(profile, workers, cluster);
  if (c.algorithm == "sgp") return sim::predict_sgp(profile, workers, c.sgp_overlap > 0, cluster);
  if (c.algorithm == "adpsgd") return sim::predict_adpsgd(profile, workers, cluster);
  return sim::predict_bsp(profile, workers, c.servers, cluster.alpha_seconds, cluster.worker_bytes_per_second,
                          cluster.server_bytes_per_second, cluster.gamma_seconds_per_byte);
}

}  // namespace

CLI::App* add_simulate_command(CLI::App& app, SimulateCommand& c) {
  auto* cmd = app.add_subcommand("simulate",
                                 "predict an algorithm's throughput and scaling efficiency for a profile (distsgd "
                                 "profile) on a cluster; analytical model");
  cmd->add_option("--profile", c.profile, "profile JSON written by distsgd profile")->required();
  cmd->add_option("--cluster", c.cluster, "cluster JSON file, or a preset: " + join(sim::cluster_preset_names()))
      ->capture_default_str();
  cmd->add_option("--algo", c.algorithm, "arsgd, bsp, asp, ssp, easgd, aladdin, gosgd, gossip, sgp or adpsgd")
      ->capture_default_str();
  cmd->add_option("--gossip-prob", c.gossip_probability, "gosgd: probability of a push per step")
      ->capture_default_str();
  cmd->add_option("--sgp-overlap", c.sgp_overlap, "sgp: 1 overlaps the push with the next step, 0 does not")
      ->capture_default_str();
  cmd->add_option("--overlap", c.overlap, "arsgd: none or wfbp (bucketed, as distsgd train)")->capture_default_str();
  cmd->add_option("--bucket-mb", c.bucket_mb, "arsgd wfbp: bucket size, MB")->capture_default_str();
  cmd->add_option("--first-bucket-mb", c.first_bucket_mb, "arsgd wfbp: first bucket size, MB")->capture_default_str();
  cmd->add_option("--servers", c.servers, "parameter-server shards")->capture_default_str();
  cmd->add_option("--staleness", c.staleness, "ssp: staleness bound s")->capture_default_str();
  cmd->add_option("--tau", c.tau, "easgd: iterations between exchanges")->capture_default_str();
  cmd->add_option("--pi", c.pi, "aladdin: gradients between the server's replies")->capture_default_str();
  cmd->add_option("--workers", c.workers, "worker counts to predict, e.g. 1,2,4,8")->delimiter(',');
  cmd->add_option("--out", c.out, "JSON file for the predictions");
  return cmd;
}

int run_simulate(const SimulateCommand& c) {
  const std::vector<std::string> known = {"arsgd",   "bsp",   "asp",    "ssp", "easgd",
                                          "aladdin", "gosgd", "gossip", "sgp", "adpsgd"};
  require(std::find(known.begin(), known.end(), c.algorithm) != known.end(),
          "--algo: the simulator predicts " + join(known) + " so far (got '" + c.algorithm + "')");
  require(c.gossip_probability >= 0 && c.gossip_probability <= 1, "--gossip-prob must be in [0, 1]");
  require(c.staleness >= 0 && c.tau >= 1 && c.pi >= 1,
          "--staleness must not be negative, --tau and --pi must be at least 1");
  require(c.overlap == "none" || c.overlap == "wfbp", "--overlap must be none or wfbp (got '" + c.overlap + "')");
  require(c.servers >= 1, "--servers must be at least 1");
  require(c.bucket_mb >= 0 && c.first_bucket_mb >= 0, "--bucket-mb and --first-bucket-mb must not be negative");
  require(!c.workers.empty(), "--workers: give at least one worker count");
  for (const int64_t w : c.workers) require(w >= 1, "--workers: " + std::to_string(w) + " is not a worker count");
  const auto profile = sim::load_model_profile(c.profile);
  const auto cluster = sim::load_cluster(c.cluster);

  nlohmann::json rows = nlohmann::json::array();
  std::cout << c.algorithm << (c.algorithm == "arsgd" ? " (overlap " + c.overlap + ")" : "") << ", " << profile.model
            << " batch " << profile.batch_size << " per worker, on " << cluster.name << " (" << cluster.source
            << "); analytical\n"
            << "  workers  iteration_ms  samples/s  efficiency  exposed_comm_ms\n";
  for (const int64_t workers : c.workers) {
    const auto p = predict(c, profile, cluster, workers);
    char line[128];
    std::snprintf(line, sizeof line, "  %7lld  %12.3f  %9.0f  %9.1f%%  %15.3f\n", static_cast<long long>(workers),
                  p.iteration_seconds * 1e3, p.samples_per_second, 100 * p.scaling_efficiency,
                  p.exposed_communication_seconds * 1e3);
    std::cout << line;
    rows.push_back({{"workers", workers},
                    {"iteration_seconds", p.iteration_seconds},
                    {"samples_per_second", p.samples_per_second},
                    {"scaling_efficiency", p.scaling_efficiency},
                    {"exposed_communication_seconds", p.exposed_communication_seconds}});
  }
  std::cout.flush();
  if (!c.out.empty()) {
    write_json_atomically(c.out, {{"fidelity", "analytical"},
                                  {"algorithm", c.algorithm},
                                  {"overlap", c.overlap},
                                  {"bucket_mb", c.bucket_mb},
                                  {"first_bucket_mb", c.first_bucket_mb},
                                  {"servers", c.servers},
                                  {"staleness", c.staleness},
                                  {"tau", c.tau},
                                  {"pi", c.pi},
                                  {"profile", c.profile},
                                  {"cluster", sim::to_json(cluster)},
                                  {"predictions", rows}});
  }
  return 0;
}

}  // namespace distsgd::cli
