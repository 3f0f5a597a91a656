// The cells of a study: every combination of its axes' values (minus the excluded ones), each with the flags of its
// run, checked as `distsgd train` checks its command line before anything runs.
#pragma once
#include "distsgd/core/config.hpp"
#include "distsgd/experiment/study_spec.hpp"

#include <string>
#include <utility>
#include <vector>

namespace distsgd::experiment {

struct StudyCell {
  std::string grid;   // the grid's name; empty when the study has one
  std::string id;     // "workers=4_algo=asp" (under its grid's folder when named): its directory under cells/
  std::string label;  // "workers=4, algo=asp": how tables and plots name it
  std::vector<std::pair<std::string, std::string>> axis_labels;  // axis name -> the label of its value here
  FlagList flags;                                                // base, recipe, axis values (no --out)
  TrainConfig config;                                            // those flags parsed and validated
  bool simulated_only = false;  // a worker count of simulate_workers: predicted, never run

  std::vector<std::string> arguments() const { return flag_words(flags); }
  // The label of this cell's value on the axis named `name` ("" when the axis is not in its grid).
  std::string axis_label(const std::string& name) const;
};

// Every cell of every grid, in grid order, the first axis varying slowest. Throws Error naming the source and the
// cell when a cell's flags are impossible (a flag its algorithm does not take, too few workers, ...).
std::vector<StudyCell> expand_study(const StudySpec& spec, const std::string& source);

// "asp b16" -> "asp-b16": a label as a directory name (letters, digits, '.', '=', '-').
std::string path_safe(const std::string& text);

}  // namespace distsgd::experiment
