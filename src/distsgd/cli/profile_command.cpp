#include "distsgd/cli/profile_command.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <sstream>

#include "distsgd/cli/train_command.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/experiment/forwarded_flags.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/models/operation_costs.hpp"
#include "distsgd/sim/platform/analytical_profile.hpp"
#include "distsgd/sim/platform/device_description.hpp"
#include "distsgd/sim/platform/model_profile.hpp"
#include "distsgd/train/model_cost.hpp"
#include "distsgd/train/options.hpp"
#include "distsgd/train/process.hpp"
#include "distsgd/train/profile_file.hpp"

namespace distsgd::cli {

using experiment::kModelAndDataFlags;
namespace {

std::string micros(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%10.1f", seconds * 1e6);
  return text;
}

// "CxHxW" -> {C, H, W}.
std::vector<int64_t> parse_input_shape(const std::string& text) {
  std::vector<int64_t> dims;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, 'x')) {
    char* end = nullptr;
    const long long value = std::strtoll(part.c_str(), &end, 10);
    require(!part.empty() && end && *end == '\0' && value > 0,
            "--input-shape: '" + text + "' is not of the form CxHxW with positive sizes (e.g. 3x224x224)");
    dims.push_back(value);
  }
  require(dims.size() == 3, "--input-shape: '" + text + "' is not of the form CxHxW (e.g. 3x224x224)");
  return dims;
}

int list_devices() {
  std::cout << "device          TFLOPS   GB/s  efficiency  calibration\n";
  for (const auto& d : sim::device_presets()) {
    char figures[64];
    std::snprintf(figures, sizeof figures, "%-14s %7.1f %6.0f %11.3f  ", d.name.c_str(), d.peak_flops / 1e12,
                  d.memory_bytes_per_second / 1e9, d.efficiency);
    std::ostringstream calibration;
    if (d.calibrated()) {
      calibration << d.calibration.model << " batch " << d.calibration.batch_size << " at "
                  << d.calibration.samples_per_second << " samples/s";
    } else {
      calibration << d.efficiency_note;
    }
    std::cout << figures << calibration.str() << "\n    peak and bandwidth: " << d.source << "\n";
    if (d.calibrated()) std::cout << "    calibration: " << d.calibration.source << "\n";
  }
  return 0;
}

int run_analytical_profile(const ProfileCommand& command) {
  train::validate(command.config);
  auto device = sim::load_device(command.device);
  const int64_t batch = command.config.batch_size;
  const auto cost = train::count_model_cost(command.config, parse_input_shape(command.input_shape), command.classes);
  if (command.calibrate_samples_per_second > 0) {
    device.efficiency = sim::calibrated_efficiency(cost, device, batch, command.calibrate_samples_per_second);
    device.calibration = {cost.model, batch, command.calibrate_samples_per_second, "distsgd profile --calibrate"};
    device.efficiency_note = "calibrated by --calibrate on " + cost.model + " batch " + std::to_string(batch);
  } else if (command.efficiency > 0) {
    require(command.efficiency <= 1, "--efficiency must be in (0, 1]");
    device.efficiency = command.efficiency;
    device.efficiency_note = "given by --efficiency";
  }
  auto profile = sim::analytical_profile(cost, device, batch, command.data_seconds);
  profile.input_shape = parse_input_shape(command.input_shape);
  nlohmann::json json = sim::to_json(profile);
  json["analytical"] = {{"device", sim::to_json(device)},
                        {"costs", sim::cost_json(cost, batch)},
                        {"update_passes_per_gradient_byte", sim::kUpdatePassesPerGradientByte}};
  write_json_atomically(command.out, json);

  const double iteration = sim::analytical_iteration_seconds(cost, device, batch);
  std::cout << profile.model << ", batch " << batch << ", input " << command.input_shape << ", on " << device.name
            << " (efficiency " << device.efficiency << ", " << device.efficiency_note << "); analytical, us\n";
  std::cout << train::tensor_table(profile);
  std::cout << "  forward " << cost.forward_flops_per_sample() / 1e9 << " GFLOPs per sample; sum of tensors: forward"
            << micros(profile.forward_seconds()) << ", backward" << micros(profile.backward_seconds()) << "; update"
            << micros(profile.update_seconds_per_byte * profile.gradient_bytes()) << "; h2d (hidden)"
            << micros(profile.h2d_seconds) << "\n  one device: iteration" << micros(iteration) << ", "
            << static_cast<double>(batch) / iteration << " samples/s\n";
  if (!cost.generic_ops.empty()) {
    std::cout << "  costed by the generic elementwise rule: ";
    for (const auto& op : cost.generic_ops) std::cout << op << " ";
    std::cout << "\n";
  }
  std::cout << "wrote " << command.out << std::endl;
  return 0;
}

}  // namespace

CLI::App* add_profile_command(CLI::App& app, ProfileCommand& command) {
  auto* cmd = app.add_subcommand(
      "profile",
      "measure a model's per-tensor forward and backward times, data time and update cost for the simulator");
  // The model and data flags (validate and study pass kModelAndDataFlags on), and what the update's cost depends on.
  std::vector<std::string> flags = kModelAndDataFlags;
  flags.insert(flags.end(), {"--batch-size", "--threads", "--momentum", "--weight-decay", "--optimizer"});
  add_train_options(*cmd, command.config, flags);
  cmd->add_option("--repeats", command.repeats, "timed iterations (after 3 untimed), at least 3")
      ->capture_default_str();
  cmd->add_option("--out", command.out, "the profile JSON to write")->capture_default_str();
  cmd->add_option("--ranks-at-once", command.ranks_at_once,
                  "also count the iterations K threads complete together in a window (about --repeats each; one "
                  "thread each, as ranks run with --threads 1) against one thread alone: the cores' worth K ranks "
                  "computing together get on this host (\"compute_capacity\" in the profile; distsgd validate uses it "
                  "as the simulator's --shared-cores)");
  auto* device = cmd->add_option("--device", command.device,
                                 "measure nothing: count the model's FLOPs and bytes and write an analytical profile "
                                 "for this device, a preset (" +
                                     join(sim::device_preset_names()) + ") or a JSON file");
  cmd->add_flag("--list-devices", command.list_devices, "list the device presets, their figures and sources");
  cmd->add_option("--input-shape", command.input_shape,
                  "analytical: one sample, CxHxW (with --dataset text: one sequence of --context bytes)")
      ->capture_default_str()
      ->needs(device);
  cmd->add_option("--classes", command.classes, "analytical: classes of the model's output")
      ->capture_default_str()
      ->needs(device);
  cmd->add_option("--efficiency", command.efficiency, "analytical: efficiency in (0, 1] instead of the device's")
      ->needs(device);
  cmd->add_option("--calibrate", command.calibrate_samples_per_second,
                  "analytical: fit the efficiency so that --model at --batch-size runs at this many samples/s")
      ->needs(device)
      ->excludes("--efficiency");
  cmd->add_option("--data-seconds", command.data_seconds, "analytical: data time per batch (0: read ahead)")
      ->capture_default_str()
      ->needs(device);
  return cmd;
}

int run_profile(const ProfileCommand& command) {
  if (command.list_devices) return list_devices();
  require(command.device.empty() || command.ranks_at_once == 0,
          "--ranks-at-once measures this host's cores: it does not go with --device");
  if (!command.device.empty()) return run_analytical_profile(command);
  train::validate(command.config);
  std::cout << train::write_measured_profile(command.config, command.repeats, command.ranks_at_once, command.out)
            << std::flush;
  return 0;
}

}  // namespace distsgd::cli
