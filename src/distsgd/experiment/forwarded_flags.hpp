// Training flags that validate and advise take as `distsgd train` does and hand on, as typed, to the train and
// profile commands they run (and that study's predictions hand to profile).
#pragma once
#include <string>
#include <vector>

namespace distsgd::experiment {

// The model and data: the same for profile and train.
extern const std::vector<std::string> kModelAndDataFlags;
// Train's only (profile does not take them).
extern const std::vector<std::string> kTrainOnlyDataFlags;

}  // namespace distsgd::experiment
