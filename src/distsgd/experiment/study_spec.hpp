// A study specification: a grid of training runs `distsgd study` carries out. Its JSON form:
//   {
//     "name": "mine", "description": "what it measures",
//     "base": {"--model": "lenet5", "--epochs": 2},               flags of every cell (values as on the command
//                                                                  line: text, number, list; true for a switch;
//                                                                  null: the flag's default)
//     "recipes": {"asp": {"--servers": 1, "--momentum": 0}},      flags of the cells whose --algo is the key
//     "axes": {"--workers": [2, 4],                                a train flag and its values, or a named axis
//              "variant": [{"label": "ssp s=3", "--algo": "ssp", "--staleness": 3}]},  of labelled flag bundles
//     "exclude": [{"--workers": 2, "variant": ["ssp s=3"]}],      cells to leave out (every named axis matches)
//     "simulate_workers": [8, 16],                                 worker counts only predicted (past this host)
//     "simulate": {"profile": "auto", "clusters": {"": "FILE"}, "args": ["--fidelity", "des"]},
//     "cell_timeout_seconds": 0,
//     "grids": [{"name": "scaling", "base": ..., "axes": ..., ...}]  several grids, each adding to the above
//   }
// A cell's flags: base, then its algorithm's recipe, then its axis values (an axis wins over a recipe).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace distsgd::experiment {

// One train flag as a cell sets it: its values as command-line words (none for a switch that is given), or unset:
// back to the flag's default (a null in the spec).
struct FlagValue {
  std::string flag;
  std::vector<std::string> values;
  bool unset = false;
};
using FlagList = std::vector<FlagValue>;

// Sets (or unsets) flag in list, replacing an earlier setting of the same flag.
void set_flag(FlagList& list, const FlagValue& value);
// The flags a list gives, as command-line words in order (unset flags give none).
std::vector<std::string> flag_words(const FlagList& list);
// The list of command-line words ("--servers", "1", "--trace", ...): each flag with the values that follow it.
FlagList flag_list_of(const std::vector<std::string>& words);

struct AxisValue {
  std::string label;  // "4", "asp", "ssp s=3"
  FlagList flags;
};

struct Axis {
  std::string name;  // a train flag ("--workers") or the name of a bundle axis ("variant")
  std::vector<AxisValue> values;
  bool is_flag() const { return name.rfind("--", 0) == 0; }
  // "workers", "variant": the name in cell labels and in results.csv's axis.* columns.
  std::string short_name() const { return is_flag() ? name.substr(2) : name; }
};

// A cell is excluded when, for every axis named, its value's label is one of those listed.
using ExcludeRule = std::vector<std::pair<std::string, std::vector<std::string>>>;

struct GridSpec {
  std::string name;  // empty when the study has one grid
  FlagList base;
  std::map<std::string, FlagList> recipes;  // by algorithm name
  std::vector<Axis> axes;
  std::vector<ExcludeRule> exclude;
  std::vector<int64_t> simulated_workers;  // predicted only, never run
};

// How the simulator's prediction is taken for each cell (experiment/study_prediction.hpp).
struct SimulationSpec {
  bool enabled = true;
  std::string profile = "auto";                 // "auto": `distsgd profile` per model and batch size; or a file
  int64_t profile_repeats = 20;                 // --repeats of `distsgd profile`
  std::map<std::string, std::string> clusters;  // --net value ("" for loopback) -> preset or cluster file
  std::vector<std::string> args;                // more `distsgd simulate` words, e.g. --fidelity des
};

struct StudySpec {
  std::string name;
  std::string description;
  std::vector<GridSpec> grids;
  SimulationSpec simulation;
  double cell_timeout_seconds = 0;  // 0: none
  std::string command = "study";    // the command running the cells, which starts their progress lines
  nlohmann::ordered_json json;      // as given (written to the study directory)
};

// Parses a specification; `source` names it in errors ("spec.json", "preset demo"). Every flag is checked against
// `distsgd train`'s options; throws Error naming the source, the field and what was expected.
StudySpec parse_study_spec(const nlohmann::ordered_json& json, const std::string& source);
StudySpec load_study_spec(const std::string& path);

}  // namespace distsgd::experiment
