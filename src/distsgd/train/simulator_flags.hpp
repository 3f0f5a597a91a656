// A run's settings as the simulator's flags: what `distsgd simulate` needs to predict the run a config.json records
// (calibrate --runs makes points of them; train --virtual simulates its own run on a calibration's other clusters).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace distsgd::train {

// The algorithm settings of `config` (a run's config.json, or config_json of a TrainConfig) that the simulator takes,
// as flags: {"--servers", "2", "--overlap", "wfbp", ...}. Not --algo, --workers, --cluster, --profile: the caller
// names those.
std::vector<std::string> simulator_flags_of_run(const nlohmann::json& config);

}  // namespace distsgd::train
