// `distsgd profile`: measures a model for the performance model and writes the simulator's profile JSON
// (sim/model_profile.hpp), with the spreads of every figure beside it.
#pragma once
#include <cstdint>
#include <string>

#include "distsgd/core/config.hpp"

namespace CLI {
class App;
}

namespace distsgd::cli {

struct ProfileCommand {
  TrainConfig config;  // model, data, batch size, threads, seed
  int64_t repeats = 20;
  std::string out = "profile.json";
};

CLI::App* add_profile_command(CLI::App& app, ProfileCommand& command);
int run_profile(const ProfileCommand& command);

}  // namespace distsgd::cli
