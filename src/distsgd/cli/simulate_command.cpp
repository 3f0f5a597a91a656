#include "distsgd/cli/simulate_command.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <utility>

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

using Predictor = std::function<sim::Prediction(const SimulateCommand&, const sim::ModelProfile&,
                                                const sim::ClusterDescription&, int64_t workers)>;

// Every algorithm the simulator predicts, by its name in `distsgd train --algo`.
const std::vector<std::pair<std::string, Predictor>>& predictors() {
  using C = const SimulateCommand&;
  using P = const sim::ModelProfile&;
  using L = const sim::ClusterDescription&;
  static const std::vector<std::pair<std::string, Predictor>> all = {
      {"arsgd",
       [](C c, P p, L l, int64_t w) {
         return sim::predict_allreduce_sgd(
             p, w, l, sim::allreduce_settings(c.overlap, c.bucket_mb * kMB, c.first_bucket_mb * kMB));
       }},
      {"bsp", [](C c, P p, L l, int64_t w) { return sim::predict_bsp(p, w, c.servers, l); }},
      {"asp", [](C c, P p, L l, int64_t w) { return sim::predict_asp(p, w, c.servers, l); }},
      {"ssp", [](C c, P p, L l, int64_t w) { return sim::predict_ssp(p, w, c.servers, c.staleness, l); }},
      {"easgd", [](C c, P p, L l, int64_t w) { return sim::predict_easgd(p, w, c.servers, c.tau, l); }},
      {"aladdin", [](C c, P p, L l, int64_t w) { return sim::predict_aladdin(p, w, c.servers, c.pi, l); }},
      {"gosgd", [](C c, P p, L l, int64_t w) { return sim::predict_gosgd(p, w, c.gossip_probability, l); }},
      {"gossip", [](C, P p, L l, int64_t w) { return sim::predict_gossip(p, w, l); }},
      {"sgp", [](C c, P p, L l, int64_t w) { return sim::predict_sgp(p, w, c.sgp_overlap > 0, l); }},
      {"adpsgd", [](C, P p, L l, int64_t w) { return sim::predict_adpsgd(p, w, l); }},
  };
  return all;
}

std::vector<std::string> predictor_names() {
  std::vector<std::string> names;
  for (const auto& entry : predictors()) names.push_back(entry.first);
  return names;
}

}  // namespace

CLI::App* add_simulate_command(CLI::App& app, SimulateCommand& c) {
  auto* cmd = app.add_subcommand("simulate",
                                 "predict an algorithm's throughput and scaling efficiency for a profile (distsgd "
                                 "profile) on a cluster; analytical model");
  cmd->add_option("--profile", c.profile, "profile JSON written by distsgd profile")->required();
  cmd->add_option("--cluster", c.cluster, "cluster JSON file, or a preset: " + join(sim::cluster_preset_names()))
      ->capture_default_str();
  cmd->add_option("--algo", c.algorithm, join_or(predictor_names()))->capture_default_str();
  cmd->add_option("--gossip-prob", c.gossip_probability, "gosgd: probability of a push per step")
      ->capture_default_str();
  cmd->add_option("--sgp-overlap", c.sgp_overlap, "sgp: 1 overlaps the push with the next step, 0 does not")
      ->capture_default_str();
  cmd->add_option("--overlap", c.overlap,
                  "arsgd: none, wfbp (bucketed, as distsgd train), mgwfbp (MG-WFBP's merged layers) or multistep (as "
                  "distsgd train)")
      ->capture_default_str();
  cmd->add_flag_callback(
      "--list-clusters",
      [] {
        std::cout << sim::describe_cluster_presets();
        throw CLI::Success();  // like --help: nothing else runs, and --profile is not needed
      },
      "print the cluster presets with their links and sources, and exit");
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
  const auto predictor = std::find_if(predictors().begin(), predictors().end(),
                                      [&](const auto& entry) { return entry.first == c.algorithm; });
  require(predictor != predictors().end(),
          "--algo: the simulator predicts " + join(predictor_names()) + " so far (got '" + c.algorithm + "')");
  require(c.gossip_probability >= 0 && c.gossip_probability <= 1, "--gossip-prob must be in [0, 1]");
  require(c.staleness >= 0 && c.tau >= 1 && c.pi >= 1,
          "--staleness must not be negative, --tau and --pi must be at least 1");
  sim::allreduce_settings(c.overlap, 0, 0);  // throws for an unknown --overlap
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
    const auto p = predictor->second(c, profile, cluster, workers);
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
