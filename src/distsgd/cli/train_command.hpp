// `distsgd train`: its command-line options (every declared option of train/options.hpp, none listed here) and
// the run: launch the processes, or train in this one.
#pragma once
#include "distsgd/core/config.hpp"

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace distsgd::cli {

// Adds the train subcommand; the options write into config as they are parsed.
CLI::App* add_train_command(CLI::App& app, TrainConfig& config);

// Trains, or launches the processes that do. `command` is the parsed train subcommand (which flags were given).
int run_train(TrainConfig& config, const CLI::App& command, int argc, char** argv);

// Adds the declared training options named in `flags` to another subcommand (distsgd profile).
void add_train_options(CLI::App& cmd, TrainConfig& config, const std::vector<std::string>& flags);

}  // namespace distsgd::cli
