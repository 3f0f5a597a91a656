// `distsgd profile`: measures a model for the performance model and writes the simulator's profile JSON
// (sim/platform/model_profile.hpp), with the spreads of every figure beside it. With --device it measures nothing: it
// counts the model's FLOPs and bytes and writes an analytical profile for that device
// (sim/platform/analytical_profile.hpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "distsgd/core/config.hpp"

namespace CLI {
class App;
}

namespace distsgd::sim {
struct ModelCost;
}

namespace distsgd::cli {

struct ProfileCommand {
  TrainConfig config;  // model, data, batch size, threads, seed
  int64_t repeats = 20;
  int64_t ranks_at_once = 0;  // > 1: also measure the compute capacity K ranks get (train/compute_capacity.hpp)
  std::string out = "profile.json";
  // Analytical profiles.
  std::string device;  // a preset or a JSON file; empty: measure on this machine
  bool list_devices = false;
  std::string input_shape = "3x224x224";  // one sample, CxHxW (ImageNet, as the published figures)
  int64_t classes = 1000;
  double efficiency = 0;                    // > 0: instead of the device's
  double calibrate_samples_per_second = 0;  // > 0: fit the efficiency to this throughput of --model
  double data_seconds = 0;                  // t_io per batch; 0: read ahead
};

CLI::App* add_profile_command(CLI::App& app, ProfileCommand& command);
int run_profile(const ProfileCommand& command);

}  // namespace distsgd::cli
