// `distsgd advise`'s command line (the ranking itself: experiment/advice.hpp).
#pragma once
#include "distsgd/experiment/advice.hpp"

namespace CLI {
class App;
}

namespace distsgd::cli {

// The command line's settings: advise's (experiment/advice.hpp) and the parsed subcommand, whose model and data
// flags are handed on as given.
struct AdviseCommand : experiment::AdviceSettings {
  CLI::App* command = nullptr;
};

CLI::App* add_advise_command(CLI::App& app, AdviseCommand& command);
int run_advise(AdviseCommand& command);

}  // namespace distsgd::cli
