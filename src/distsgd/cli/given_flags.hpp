// The training flags a subcommand was given, as typed, to hand on to the train and profile commands it runs
// (which flags: experiment/forwarded_flags.hpp).
#pragma once
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace distsgd::cli {

// The flags among `names` that were given to `command`, each followed by its values as typed.
std::vector<std::string> given_flags(const CLI::App& command, const std::vector<std::string>& names);

}  // namespace distsgd::cli
