// `distsgd train --resume DIR` alone: the run's settings come from DIR/config.json, so the original flags need not
// be repeated. A flag given beside --resume must agree with the recorded value, except the ones that extend or
// steer a run without changing its training (limits, targets, execution), which are taken. A run that ended and
// whose limit was not raised says so and is left as it is.
#pragma once
#include "distsgd/core/config.hpp"

#include <functional>
#include <optional>
#include <string>

namespace distsgd::train {

// Fills `config` from the run directory's config.json when config.resume names a directory that has one; `given`
// tells whether a flag was on the command line. Throws distsgd::Error naming a given flag that differs from the
// recorded value and may not change.
void take_settings_of_run(TrainConfig& config, const std::function<bool(const std::string& flag)>& given);

// When config.resume's run ended (it has summary.json) and config asks for no more training than it did: the line
// saying so. Nothing otherwise.
std::optional<std::string> finished_run_note(const TrainConfig& config);

}  // namespace distsgd::train
