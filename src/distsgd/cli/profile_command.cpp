#include "distsgd/cli/profile_command.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

#include "distsgd/cli/train_command.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/sim/model_profile.hpp"
#include "distsgd/train/layer_profiler.hpp"
#include "distsgd/train/options.hpp"

namespace distsgd::cli {
namespace {

nlohmann::json spread_json(const train::Spread& s) { return {{"median", s.median}, {"iqr", s.iqr}, {"min", s.min}}; }

std::string micros(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%10.1f", seconds * 1e6);
  return text;
}

}  // namespace

CLI::App* add_profile_command(CLI::App& app, ProfileCommand& command) {
  auto* cmd = app.add_subcommand(
      "profile",
      "measure a model's per-tensor forward and backward times, data time and update cost for the simulator");
  add_train_options(*cmd, command.config,
                    {"--model", "--mlp-width", "--mlp-layers", "--no-batch-norm", "--dataset", "--data-dir",
                     "--synthetic-shape", "--synthetic-classes", "--synthetic-train-size", "--batch-size", "--threads",
                     "--seed", "--momentum", "--weight-decay"});
  cmd->add_option("--repeats", command.repeats, "timed iterations (after 3 untimed), at least 3")
      ->capture_default_str();
  cmd->add_option("--out", command.out, "the profile JSON to write")->capture_default_str();
  return cmd;
}

int run_profile(const ProfileCommand& command) {
  train::validate(command.config);
  const auto measured = train::measure_profile(command.config, command.repeats);
  sim::ModelProfile profile;
  profile.model = measured.model;
  profile.batch_size = measured.batch_size;
  profile.data_seconds = measured.data.median;
  profile.update_seconds_per_byte = measured.update_seconds_per_byte;
  for (const auto& t : measured.tensors) {
    profile.tensors.push_back({t.name, t.parameters, t.forward.median, t.backward.median});
  }
  nlohmann::json json = sim::to_json(profile);
  json["threads"] = measured.threads;
  json["repeats"] = measured.repeats;
  json["per_block_forward"] = measured.per_block_forward;
  json["data_spread"] = spread_json(measured.data);
  json["iteration_seconds"] = spread_json(measured.iteration);
  for (std::size_t i = 0; i < measured.tensors.size(); ++i) {
    json["tensors"][i]["forward_iqr_seconds"] = measured.tensors[i].forward.iqr;
    json["tensors"][i]["backward_iqr_seconds"] = measured.tensors[i].backward.iqr;
  }
  write_json_atomically(command.out, json);

  std::cout << profile.model << ", batch " << profile.batch_size << ", " << measured.threads << " thread(s), "
            << measured.repeats << " repeats (medians, us)\n"
            << "  tensor                              parameters   forward  backward\n";
  for (const auto& t : profile.tensors) {
    std::string name = t.name.substr(0, 34);
    name.resize(34, ' ');
    std::cout << "  " << name << std::string(12 - std::min<size_t>(12, std::to_string(t.parameters).size()), ' ')
              << t.parameters << micros(t.forward_seconds) << micros(t.backward_seconds) << "\n";
  }
  std::cout << "  sum of tensors: forward" << micros(profile.forward_seconds()) << ", backward"
            << micros(profile.backward_seconds()) << "; whole iteration" << micros(measured.iteration.median)
            << "; data" << micros(profile.data_seconds) << "; update"
            << micros(profile.update_seconds_per_byte * profile.gradient_bytes()) << "\nwrote " << command.out
            << std::endl;
  return 0;
}

}  // namespace distsgd::cli
