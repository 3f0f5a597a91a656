// `distsgd validate`'s command line (the validation itself: experiment/validation.hpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "distsgd/experiment/validation.hpp"

namespace CLI {
class App;
}

namespace distsgd::cli {

// The command line's settings: validate's (experiment/validation.hpp) and the parsed subcommand, whose model and data
// flags are handed on as given.
struct ValidateCommand : experiment::ValidationSettings {
  CLI::App* command = nullptr;
};

CLI::App* add_validate_command(CLI::App& app, ValidateCommand& command);
int run_validate(ValidateCommand& command);

}  // namespace distsgd::cli
