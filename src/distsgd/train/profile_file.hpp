// A measured profile as `distsgd profile --out` writes it (the simulator's ModelProfile, plus how the measurement
// spread), and its table. The command and the study's in-process profiles (experiment/profile_in_process) share it.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "distsgd/core/config.hpp"
#include "distsgd/sim/platform/model_profile.hpp"
#include "distsgd/train/layer_profiler.hpp"

namespace distsgd::train {

sim::ModelProfile model_profile_of(const MeasuredProfile& measured);
// The document written to the profile file: model_profile_of's JSON and the medians' spreads.
nlohmann::json measured_profile_json(const MeasuredProfile& measured);
// The table `distsgd profile` prints: one line per tensor (microseconds), the sums, and where it was written.
std::string measured_profile_text(const MeasuredProfile& measured, const std::string& out);
// One line per tensor: name, parameters, forward and backward microseconds (also of analytical profiles).
std::string tensor_table(const sim::ModelProfile& profile);

// Measures config's model (`repeats` timed iterations) and, with `ranks_at_once` >= 2, the cores that many ranks get
// together (compute_capacity.hpp), writes the profile to `out` and returns the table (and the capacity's line).
// Throws Error for a `ranks_at_once` of 1 or below 0, before measuring anything.
std::string write_measured_profile(const TrainConfig& config, int64_t repeats, int64_t ranks_at_once,
                                   const std::string& out);

}  // namespace distsgd::train
