#include "distsgd/cli/train_command.hpp"

#include "distsgd/algo/algorithm.hpp"
#include "distsgd/cli/declared_options.hpp"
#include "distsgd/cli/emulated_launch.hpp"
#include "distsgd/comm/process_env.hpp"
#include "distsgd/comm/self_launch.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/core/log.hpp"
#include "distsgd/train/checkpoint_files.hpp"
#include "distsgd/train/host_resources.hpp"
#include "distsgd/train/options.hpp"
#include "distsgd/train/process.hpp"
#include "distsgd/train/resume_settings.hpp"
#include "distsgd/train/run_lock.hpp"
#include "distsgd/train/trainer.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>

namespace distsgd::cli {
namespace {

std::string results_line(const nlohmann::json& s) {
  std::ostringstream line;
  line << "result";
  // A classifier reports test_accuracy, a language model test_bits_per_byte: the line shows the one the run has.
  for (const char* key :
       {"algorithm", "model", "dataset", "workers", "servers", "epochs", "test_accuracy", "test_bits_per_byte",
        "test_loss", "samples_per_second", "wall_seconds", "stop_reason", "out"}) {
    if (!s.contains(key)) continue;
    line << ' ' << key << '=' << (s[key].is_string() ? s[key].get<std::string>() : s[key].dump());
  }
  return line.str();
}

// The network report goes beside the run's results: network.json, and summary.json's "network" (when the run got
// far enough to write one).
void write_network_report(const std::string& out, const nlohmann::json& report) {
  if (!std::filesystem::is_directory(out)) return;
  write_json_atomically(out + "/network.json", report);
  update_json_file(out + "/summary.json", [&](nlohmann::json& summary) {
    // The counters include start-up and the last evaluation; utilisation over the training time alone tells how
    // busy the links were while the algorithm ran (the start-up traffic, rendezvous and one broadcast, is small).
    nlohmann::json network = report;
    const double training_seconds = summary.value("wall_seconds", 0.0);
    for (auto& link : network["links"]) {
      const double bytes_per_second = link["rate_bits_per_second"].get<double>() / 8;
      for (const char* direction : {"sent", "received"}) {
        link[std::string("training_utilisation_") + direction] =
            bytes_per_second > 0 && training_seconds > 0
                ? nlohmann::json(link[std::string("bytes_") + direction].get<double>() /
                                 (bytes_per_second * training_seconds))
                : nlohmann::json(nullptr);
      }
    }
    summary["network"] = network;
  });
}

// A run that stopped because it diverged fails, with the one line its summary holds.
int report_divergence(const nlohmann::json& summary) {
  std::cerr << "distsgd: error: " << summary["divergence"].value("message", std::string("training diverged"))
            << std::endl;
  return 1;
}

// The processes ended well: a run that diverged is reported here, once, from its summary.
int status_of_launch(int status, const std::string& out) {
  const auto path = out + "/summary.json";
  if (status != 0 || !std::filesystem::exists(path)) return status;
  const auto summary = read_json_file(path, "run summary");
  return summary.value("stop_reason", std::string()) == "diverged" ? report_divergence(summary) : 0;
}

// Without an external launcher, `distsgd train --workers W --servers S` starts W+S copies of itself on this
// host (or on the emulated cluster of --net), hosts their rendezvous store, and supervises them.
int launch_processes(TrainConfig& config, const cluster::NetworkRequest& network, int argc, char** argv) {
  train::validate(config);
  if (config.out.empty()) config.out = config.resume.empty() ? train::default_run_dir(config) : config.resume;
  // A run directory in use, or a checkpoint that cannot be resumed, is refused here, in one line, before any
  // process starts.
  train::RunDirectoryLock::refuse_if_held(config.out);
  if (!config.resume.empty()) train::checked_checkpoint(config);
  // A run that cannot fit in this host's memory is refused before any process starts; the dataset's shared copy is
  // made here, once, for the processes to map.
  train::check_host_resources(config);
  std::vector<std::string> labels;
  for (int64_t r = 0; r < config.processes(); ++r) {
    labels.push_back(r < config.workers ? "worker " + std::to_string(r)
                                        : "server " + std::to_string(r - config.workers));
  }
  // Under --on-worker-loss continue, a worker but worker 0 may die without stopping the others.
  std::vector<bool> survivable;
  const bool continues = algo::continues_after_worker_loss(config);
  for (int64_t r = 0; r < config.processes(); ++r) survivable.push_back(continues && r > 0 && r < config.workers);
  const std::string what =
      std::to_string(config.workers) + " worker(s) and " + std::to_string(config.servers) + " server(s)";
  if (cluster::network_requested(network)) {
    const int status = launch_on_emulated_cluster(
        network, config.workers, config.servers, config.seed, what + " (run directory " + config.out + ")", argc, argv,
        labels, {{"DISTSGD_OUT", config.out}},
        [&](const nlohmann::json& report) { write_network_report(config.out, report); }, survivable);
    return status_of_launch(status, config.out);
  }
  log::info("launching " + what + " on this host; run directory " + config.out);
  return status_of_launch(comm::launch_self(argc, argv, labels, {{"DISTSGD_OUT", config.out}}, nullptr, survivable),
                          config.out);
}

}  // namespace

CLI::App* add_train_command(CLI::App& app, TrainConfig& config) {
  auto* cmd = app.add_subcommand("train", "train a model; writes config.json, metrics.jsonl, summary.json");
  for (const auto& spec : train::train_options()) add_declared_option(*cmd, spec, config);
  return cmd;
}

void add_train_options(CLI::App& cmd, TrainConfig& config, const std::vector<std::string>& flags) {
  for (const auto& spec : train::train_options()) {
    if (std::find(flags.begin(), flags.end(), spec.flag) != flags.end()) add_declared_option(cmd, spec, config);
  }
}

int run_train(TrainConfig& config, const CLI::App& command, int argc, char** argv) {
  const auto env = comm::process_env_from_environment();
  // --resume DIR alone continues with DIR's settings; a run that ended is left alone unless a limit was raised.
  train::take_settings_of_run(config, [&](const std::string& flag) { return command.count(flag) > 0; });
  if (const auto note = train::finished_run_note(config)) {
    if (!env || env->rank == 0) log::info(*note);
    return 0;
  }
  // Under mpirun, srun or torchrun without --workers, the launcher's process count says how many workers there are.
  if (env) train::take_world_size_from_launcher(config, *env, command.count("--workers") > 0);
  if (config.virtual_cluster) {
    // Every rank inside this process: nothing to launch, nobody else to report.
    require(!env, "--virtual runs every rank inside one process: start it once, not under " +
                      (env ? env->launcher : std::string()));
    auto summary = train::run_training(config);
    std::cout << results_line(summary) << std::endl;
    return summary.value("stop_reason", std::string()) == "diverged" ? report_divergence(summary) : 0;
  }
  const auto network = network_request(config.net, config.hosts, config.placement, config.links);
  if (!env && (config.processes() > 1 || cluster::network_requested(network))) {
    return launch_processes(config, network, argc, argv);
  }
  auto summary = train::run_training(config);
  // One results line per run: from worker 0.
  const bool leader = !env || env->rank == 0 || config.processes() == 1;
  if (leader) std::cout << results_line(summary) << std::endl;
  if (summary.value("stop_reason", std::string()) != "diverged") return 0;
  // Under distsgd's own launcher the launcher reports it (status_of_launch); otherwise worker 0 does.
  const bool own_launcher = env && env->launcher == "distsgd";
  return leader && !own_launcher ? report_divergence(summary) : 0;
}

}  // namespace distsgd::cli
