// Training flags that validate and advise take as `distsgd train` does and hand on, as typed, to the train and
// profile commands they run.
#pragma once
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace distsgd::cli {

// The model and data: the same for profile and train.
extern const std::vector<std::string> kModelAndDataFlags;
// Train's only (profile does not take them).
extern const std::vector<std::string> kTrainOnlyDataFlags;

// The flags among `names` that were given to `command`, each followed by its values as typed.
std::vector<std::string> given_flags(const CLI::App& command, const std::vector<std::string>& names);

}  // namespace distsgd::cli
