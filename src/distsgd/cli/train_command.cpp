#include "distsgd/cli/train_command.hpp"

#include "distsgd/comm/process_env.hpp"
#include "distsgd/comm/self_launch.hpp"
#include "distsgd/core/log.hpp"
#include "distsgd/train/options.hpp"
#include "distsgd/train/trainer.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <sstream>

namespace distsgd::cli {
namespace {

// One CLI11 option per declaration: CLI11 collects the text, the declaration parses it (errors name the flag).
void add_option(CLI::App& cmd, const OptionSpec& spec, TrainConfig& config) {
  const std::string help = spec.hidden ? "" : spec.help;
  CLI::Option* option = nullptr;
  switch (spec.arity) {
    case OptionSpec::Arity::kSwitch:
      option = cmd.add_flag_callback(
          spec.flag, [&config, &spec] { spec.parse(config, {}); }, help);
      break;
    case OptionSpec::Arity::kOne:
      option = cmd.add_option_function<std::string>(
          spec.flag, [&config, &spec](const std::string& text) { spec.parse(config, {text}); }, help);
      option->type_name(spec.value_name)->default_str(spec.default_text());
      break;
    case OptionSpec::Arity::kMany:
      option = cmd.add_option_function<std::vector<std::string>>(
          spec.flag, [&config, &spec](const std::vector<std::string>& texts) { spec.parse(config, texts); }, help);
      option->type_name(spec.value_name);
      break;
  }
  option->group(spec.hidden ? "" : spec.group);
}

std::string results_line(const nlohmann::json& s) {
  std::ostringstream line;
  line << "result";
  for (const char* key : {"algorithm", "model", "dataset", "workers", "servers", "epochs", "test_accuracy", "test_loss",
                          "samples_per_second", "wall_seconds", "stop_reason", "out"}) {
    line << ' ' << key << '=' << (s[key].is_string() ? s[key].get<std::string>() : s[key].dump());
  }
  return line.str();
}

// Without an external launcher, `distsgd train --workers W --servers S` starts W+S copies of itself on this
// host, hosts their rendezvous store, and supervises them.
int launch_processes(TrainConfig& config, int argc, char** argv) {
  train::validate(config);
  if (config.out.empty()) config.out = train::default_run_dir(config);
  std::vector<std::string> labels;
  for (int64_t r = 0; r < config.processes(); ++r) {
    labels.push_back(r < config.workers ? "worker " + std::to_string(r)
                                        : "server " + std::to_string(r - config.workers));
  }
  log::info("launching " + std::to_string(config.workers) + " worker(s) and " + std::to_string(config.servers) +
            " server(s) on this host; run directory " + config.out);
  return comm::launch_self(argc, argv, labels, {{"DISTSGD_OUT", config.out}});
}

}  // namespace

CLI::App* add_train_command(CLI::App& app, TrainConfig& config) {
  auto* cmd = app.add_subcommand("train", "train a model; writes config.json, metrics.jsonl, summary.json");
  for (const auto& spec : train::train_options()) add_option(*cmd, spec, config);
  return cmd;
}

int run_train(TrainConfig& config, int argc, char** argv) {
  const auto env = comm::process_env_from_environment();
  if (config.processes() > 1 && !env) return launch_processes(config, argc, argv);
  auto summary = train::run_training(config);
  // One results line per run: from worker 0.
  if (!env || env->rank == 0 || config.processes() == 1) std::cout << results_line(summary) << std::endl;
  return 0;
}

}  // namespace distsgd::cli
