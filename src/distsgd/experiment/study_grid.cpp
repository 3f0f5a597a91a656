#include "distsgd/experiment/study_grid.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/train/options.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace distsgd::experiment {
namespace {

const FlagValue* find_flag(const FlagList& flags, const std::string& flag) {
  for (const auto& f : flags) {
    if (f.flag == flag && !f.unset) return &f;
  }
  return nullptr;
}

// The worker counts of simulate_workers join the --workers axis (made from the base's count when the grid has no
// such axis); returns the labels of the values that are only predicted.
std::set<std::string> add_simulated_workers(GridSpec& grid) {
  std::set<std::string> simulated;
  if (grid.simulated_workers.empty()) return simulated;
  auto axis = std::find_if(grid.axes.begin(), grid.axes.end(), [](const Axis& a) { return a.name == "--workers"; });
  if (axis == grid.axes.end()) {
    const FlagValue* base = find_flag(grid.base, "--workers");
    const std::string count = base ? base->values.at(0) : std::to_string(TrainConfig{}.workers);
    grid.axes.push_back({"--workers", {{count, {{"--workers", {count}, false}}}}});
    axis = grid.axes.end() - 1;
  }
  for (const int64_t workers : grid.simulated_workers) {
    const std::string label = std::to_string(workers);
    const bool measured =
        std::any_of(axis->values.begin(), axis->values.end(), [&](const AxisValue& v) { return v.label == label; });
    if (measured) continue;
    axis->values.push_back({label, {{"--workers", {label}, false}}});
    simulated.insert(label);
  }
  return simulated;
}

bool excluded(const GridSpec& grid, const std::vector<std::pair<std::string, std::string>>& labels) {
  return std::any_of(grid.exclude.begin(), grid.exclude.end(), [&](const ExcludeRule& rule) {
    return std::all_of(rule.begin(), rule.end(), [&](const auto& condition) {
      const auto& [axis, wanted] = condition;
      // (a lambda may not capture a structured binding before C++20, hence the init-capture)
      const auto it =
          std::find_if(labels.begin(), labels.end(), [&axis = axis](const auto& l) { return l.first == axis; });
      return it != labels.end() && std::find(wanted.begin(), wanted.end(), it->second) != wanted.end();
    });
  });
}

// The cell of one combination of axis values (value_index[i] of axis i).
StudyCell make_cell(const GridSpec& grid, const std::vector<size_t>& value_index) {
  StudyCell cell;
  cell.grid = grid.name;
  FlagList axis_flags;
  std::vector<std::string> id_parts, label_parts;
  for (size_t i = 0; i < grid.axes.size(); ++i) {
    const Axis& axis = grid.axes[i];
    const AxisValue& value = axis.values[value_index[i]];
    cell.axis_labels.emplace_back(axis.name, value.label);
    for (const auto& flag : value.flags) set_flag(axis_flags, flag);
    id_parts.push_back(path_safe(axis.short_name() + "=" + value.label));
    label_parts.push_back(axis.is_flag() ? axis.short_name() + "=" + value.label : value.label);
  }
  // The algorithm decides the recipe; the axes win over it.
  cell.flags = grid.base;
  const FlagValue* algo = find_flag(axis_flags, "--algo");
  if (!algo) algo = find_flag(grid.base, "--algo");
  const std::string algorithm = algo ? algo->values.at(0) : TrainConfig{}.algorithm;
  if (const auto recipe = grid.recipes.find(algorithm); recipe != grid.recipes.end()) {
    for (const auto& flag : recipe->second) set_flag(cell.flags, flag);
  }
  for (const auto& flag : axis_flags) set_flag(cell.flags, flag);
  cell.flags.erase(std::remove_if(cell.flags.begin(), cell.flags.end(), [](const FlagValue& f) { return f.unset; }),
                   cell.flags.end());
  cell.label = label_parts.empty() ? "run" : join(label_parts, ", ");
  const std::string id = id_parts.empty() ? "run" : join(id_parts, "_");
  cell.id = grid.name.empty() ? id : path_safe(grid.name) + "/" + id;
  return cell;
}

void parse_and_validate(StudyCell& cell, const std::string& source) {
  try {
    for (const auto& flag : cell.flags) train::set_option(cell.config, flag.flag, flag.values);
    train::validate(cell.config);
  } catch (const Error& e) {
    throw Error(source + ": cell '" + (cell.grid.empty() ? "" : cell.grid + ": ") + cell.label + "': " + e.what());
  }
}

// Counts through every combination, the last axis fastest; false when done.
bool next_combination(std::vector<size_t>& index, const std::vector<Axis>& axes) {
  for (size_t i = axes.size(); i-- > 0;) {
    if (++index[i] < axes[i].values.size()) return true;
    index[i] = 0;
  }
  return false;
}

}  // namespace

std::string StudyCell::axis_label(const std::string& name) const {
  for (const auto& [axis, label] : axis_labels) {
    if (axis == name) return label;
  }
  return "";
}

std::string path_safe(const std::string& text) {
  std::string safe;
  for (const char c : text) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '=' || c == '-';
    safe += keep ? c : '-';
  }
  return safe;
}

std::vector<StudyCell> expand_study(const StudySpec& spec, const std::string& source) {
  std::vector<StudyCell> cells;
  std::set<std::string> ids;
  for (GridSpec grid : spec.grids) {
    const auto simulated = add_simulated_workers(grid);
    std::vector<size_t> index(grid.axes.size(), 0);
    do {
      StudyCell cell = make_cell(grid, index);
      cell.simulated_only = simulated.count(cell.axis_label("--workers")) > 0;
      // A prediction does not depend on the seed: one simulated cell per other combination.
      const auto seed_axis =
          std::find_if(grid.axes.begin(), grid.axes.end(), [](const Axis& a) { return a.name == "--seed"; });
      if (cell.simulated_only && seed_axis != grid.axes.end() &&
          cell.axis_label("--seed") != seed_axis->values.front().label) {
        continue;
      }
      if (excluded(grid, cell.axis_labels)) continue;
      parse_and_validate(cell, source);
      require(ids.insert(cell.id).second,
              source + ": two cells map to the directory cells/" + cell.id + " (make their labels differ)");
      cells.push_back(std::move(cell));
    } while (next_combination(index, grid.axes));
  }
  require(!cells.empty(), source + ": the grid has no cells (every combination is excluded)");
  return cells;
}

}  // namespace distsgd::experiment
