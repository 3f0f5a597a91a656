// The options of `distsgd train`: training's own (declared in options.cpp) and every algorithm's (declared in its
// own file, gathered by the algorithm registry). The command line, validation, --help and config.json read these.
#pragma once
#include "distsgd/core/option.hpp"

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace distsgd::train {

// Every option, in --help order: training's own by group, then each algorithm's (group: the algorithms taking it).
const std::vector<OptionSpec>& train_options();

// Sets an option from its text as the command line would (tests, study grids): set_option(c, "--staleness", {"3"}).
void set_option(TrainConfig& config, const std::string& flag, const std::vector<std::string>& values);

// Throws Error naming the first invalid value or impossible combination.
void validate(const TrainConfig& config);

// config.json: every option's value under its key, plus the global batch.
nlohmann::json config_json(const TrainConfig& config);

}  // namespace distsgd::train
