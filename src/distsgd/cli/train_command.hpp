// `distsgd train`: its command-line options (every declared option of train/options.hpp, none listed here) and
// the run: launch the processes, or train in this one.
#pragma once
#include "distsgd/core/config.hpp"

namespace CLI {
class App;
}

namespace distsgd::cli {

// Adds the train subcommand; the options write into config as they are parsed.
CLI::App* add_train_command(CLI::App& app, TrainConfig& config);

int run_train(TrainConfig& config, int argc, char** argv);

}  // namespace distsgd::cli
