#include "distsgd/experiment/study_spec.hpp"

#include "distsgd/algo/algorithm.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/train/options.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>

namespace distsgd::experiment {
namespace {

using Json = nlohmann::ordered_json;

// The study gives every cell its own run directory; these belong to it.
const std::vector<std::string> kStudyOwnedFlags{"--out", "--resume", "--overwrite"};

const OptionSpec* find_train_option(const std::string& flag) {
  for (const auto& spec : train::train_options()) {
    if (spec.flag == flag) return &spec;
  }
  return nullptr;
}

// "spec.json: grids[0]" + "base" -> "spec.json: grids[0].base"; "spec.json:" + "base" -> "spec.json: base".
std::string field(const std::string& where, const std::string& name) {
  return where.back() == ':' ? where + " " + name : where + "." + name;
}

// One word of a flag's value: text or a number.
std::string word_of(const Json& value, const std::string& where) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number()) return value.dump();  // integers as such, doubles as the shortest text that reads back
  throw Error(where + ": expected text or a number, got " + value.dump());
}

// A flag and its JSON value, checked against the train option's arity.
FlagValue parse_flag(const std::string& flag, const Json& value, const std::string& where) {
  const OptionSpec* spec = find_train_option(flag);
  require(spec != nullptr, where + ": unknown flag " + flag + " (distsgd train --help lists the flags)");
  require(std::find(kStudyOwnedFlags.begin(), kStudyOwnedFlags.end(), flag) == kStudyOwnedFlags.end(),
          where + ": " + flag + " is the study's: each cell runs in its own directory under the study's --out");
  FlagValue result{flag, {}, false};
  if (value.is_null()) {
    result.unset = true;
    return result;
  }
  switch (spec->arity) {
    case OptionSpec::Arity::kSwitch:
      require(value.is_boolean(), where + ": " + flag + " is a switch: expected true or false, got " + value.dump());
      result.unset = !value.get<bool>();
      break;
    case OptionSpec::Arity::kOne:
      require(!value.is_array() && !value.is_object() && !value.is_boolean(),
              where + ": " + flag + " takes one value (text or a number), got " + value.dump());
      result.values = {word_of(value, where)};
      break;
    case OptionSpec::Arity::kMany:
      if (value.is_array()) {
        for (const auto& item : value) result.values.push_back(word_of(item, where));
        result.unset = result.values.empty();
      } else {
        result.values = {word_of(value, where)};
      }
      break;
  }
  return result;
}

// {"--flag": value, ...}; `skip` keys (e.g. "label") are not flags.
FlagList parse_flags(const Json& object, const std::string& where, const std::vector<std::string>& skip = {}) {
  require(object.is_object(), where + ": expected an object of train flags, got " + object.dump());
  FlagList flags;
  for (const auto& [key, value] : object.items()) {
    if (std::find(skip.begin(), skip.end(), key) != skip.end()) continue;
    require(key.rfind("--", 0) == 0, where + ": unknown field '" + key + "' (expected train flags such as --workers)");
    set_flag(flags, parse_flag(key, value, where));
  }
  return flags;
}

std::string label_of_flag_value(const FlagValue& value) {
  if (value.unset) return "none";
  if (value.values.empty()) return "on";
  return join(value.values, " ");
}

Axis parse_axis(const std::string& name, const Json& values, const std::string& where) {
  require(values.is_array(), where + ": expected a list of values, got " + values.dump());
  require(!values.empty(), where + ": an axis needs at least one value");
  Axis axis{name, {}};
  const bool flag_axis = name.rfind("--", 0) == 0;
  if (flag_axis) {
    require(find_train_option(name) != nullptr, where + ": unknown flag " + name +
                                                    " (an axis is a train flag, see distsgd train --help, or a "
                                                    "named axis whose values are objects with a label and flags)");
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    const Json& value = values[i];
    AxisValue axis_value;
    if (flag_axis) {
      FlagValue flag = parse_flag(name, value, at);
      axis_value.label = label_of_flag_value(flag);
      axis_value.flags = {flag};
    } else {
      require(value.is_object(),
              at + ": unknown axis '" + name +
                  "': an axis is a train flag (such as --workers) or a named axis whose values are objects "
                  "{\"label\": ..., \"--flag\": value, ...}");
      require(value.contains("label") && value["label"].is_string() && !value["label"].get<std::string>().empty(),
              at + ": a value of a named axis needs a \"label\" (text)");
      axis_value.label = value["label"].get<std::string>();
      axis_value.flags = parse_flags(value, at, {"label"});
    }
    for (const auto& other : axis.values) {
      require(other.label != axis_value.label, at + ": the label '" + axis_value.label + "' appears twice");
    }
    axis.values.push_back(std::move(axis_value));
  }
  return axis;
}

std::vector<int64_t> parse_worker_counts(const Json& value, const std::string& where) {
  require(value.is_array(), where + ": expected a list of worker counts, got " + value.dump());
  std::vector<int64_t> counts;
  for (const auto& item : value) {
    require(item.is_number_integer() && item.get<int64_t>() >= 1,
            where + ": expected worker counts (integers of at least 1), got " + item.dump());
    counts.push_back(item.get<int64_t>());
  }
  return counts;
}

std::vector<ExcludeRule> parse_exclude(const Json& value, const std::vector<Axis>& axes, const std::string& where) {
  require(value.is_array(), where + ": expected a list of objects {axis: label(s)}, got " + value.dump());
  std::vector<ExcludeRule> rules;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    require(value[i].is_object() && !value[i].empty(), at + ": expected an object {axis: label(s)}");
    ExcludeRule rule;
    for (const auto& [name, labels] : value[i].items()) {
      // (a lambda may not capture a structured binding before C++20, hence the init-capture)
      const auto axis =
          std::find_if(axes.begin(), axes.end(), [&name = name](const Axis& a) { return a.name == name; });
      require(axis != axes.end(), at + ": '" + name + "' is not an axis of this grid");
      std::vector<std::string> wanted;
      for (const auto& label : labels.is_array() ? labels : Json::array({labels})) {
        const std::string text = label.is_string() ? label.get<std::string>() : label.dump();
        const bool known =
            std::any_of(axis->values.begin(), axis->values.end(), [&](const AxisValue& v) { return v.label == text; });
        require(known, at + ": '" + text + "' is not a value of the axis " + name);
        wanted.push_back(text);
      }
      rule.emplace_back(name, wanted);
    }
    rules.push_back(std::move(rule));
  }
  return rules;
}

std::map<std::string, FlagList> parse_recipes(const Json& value, const std::string& where) {
  require(value.is_object(), where + ": expected an object {algorithm: {flags}}, got " + value.dump());
  const auto names = algo::registered_algorithm_names();
  std::map<std::string, FlagList> recipes;
  for (const auto& [algorithm, flags] : value.items()) {
    require(std::find(names.begin(), names.end(), algorithm) != names.end(),
            where + ": unknown algorithm '" + algorithm + "' (valid: " + join(names) + ")");
    recipes[algorithm] = parse_flags(flags, where + "." + algorithm);
    for (const auto& flag : recipes[algorithm]) {
      require(flag.flag != "--algo", where + "." + algorithm + ": a recipe cannot change --algo");
    }
  }
  return recipes;
}

SimulationSpec parse_simulation(const Json& value, const std::string& where) {
  SimulationSpec s;
  if (value.is_boolean()) {
    s.enabled = value.get<bool>();
    return s;
  }
  require(value.is_object(), where + ": expected false or an object, got " + value.dump());
  for (const auto& [key, item] : value.items()) {
    const std::string at = where + "." + key;
    if (key == "profile") {
      require(item.is_string() && !item.get<std::string>().empty(),
              at + ": expected \"auto\" or a profile file written by distsgd profile");
      s.profile = item.get<std::string>();
    } else if (key == "profile_repeats") {
      require(item.is_number_integer() && item.get<int64_t>() >= 3, at + ": expected an integer of at least 3");
      s.profile_repeats = item.get<int64_t>();
    } else if (key == "clusters") {
      require(item.is_object(), at + ": expected an object {net: preset or cluster file}");
      for (const auto& [net, cluster] : item.items()) {
        require(cluster.is_string(), at + "." + net + ": expected a preset name or a cluster file");
        s.clusters[net] = cluster.get<std::string>();
      }
    } else if (key == "args") {
      require(item.is_array(), at + ": expected a list of words for distsgd simulate");
      for (const auto& word : item) s.args.push_back(word_of(word, at));
    } else if (key == "enabled") {
      require(item.is_boolean(), at + ": expected true or false");
      s.enabled = item.get<bool>();
    } else {
      throw Error(at + ": unknown field (expected profile, profile_repeats, clusters, args, enabled)");
    }
  }
  return s;
}

const std::vector<std::string> kGridFields{"name", "base", "recipes", "axes", "exclude", "simulate_workers"};
const std::vector<std::string> kTopFields{
    "name",  "description",         "base", "recipes", "axes", "exclude", "simulate", "simulate_workers",
    "grids", "cell_timeout_seconds"};

void check_fields(const Json& object, const std::vector<std::string>& known, const std::string& where) {
  for (const auto& [key, value] : object.items()) {
    require(std::find(known.begin(), known.end(), key) != known.end(),
            where + ": unknown field '" + key + "' (expected " + join_or(known) + ")");
  }
}

// A grid from its object, on top of `inherited` (the study's top-level base, recipes, axes and worker counts).
GridSpec parse_grid(const Json& object, const GridSpec& inherited, const std::string& where) {
  GridSpec grid = inherited;
  grid.exclude.clear();
  if (object.contains("base")) {
    for (const auto& flag : parse_flags(object["base"], field(where, "base"))) set_flag(grid.base, flag);
  }
  if (object.contains("recipes")) {
    for (const auto& [algorithm, flags] : parse_recipes(object["recipes"], field(where, "recipes"))) {
      for (const auto& flag : flags) set_flag(grid.recipes[algorithm], flag);
    }
  }
  if (object.contains("axes")) {
    const Json& axes = object["axes"];
    require(axes.is_object(), field(where, "axes") + ": expected an object {axis: [values]}, got " + axes.dump());
    for (const auto& [name, values] : axes.items()) {
      Axis axis = parse_axis(name, values, field(where, "axes." + name));
      const auto same =
          std::find_if(grid.axes.begin(), grid.axes.end(), [&name = name](const Axis& a) { return a.name == name; });
      if (same != grid.axes.end()) {
        *same = std::move(axis);
      } else {
        grid.axes.push_back(std::move(axis));
      }
    }
  }
  if (object.contains("exclude")) grid.exclude = parse_exclude(object["exclude"], grid.axes, field(where, "exclude"));
  if (object.contains("simulate_workers")) {
    grid.simulated_workers = parse_worker_counts(object["simulate_workers"], field(where, "simulate_workers"));
  }
  return grid;
}

}  // namespace

void set_flag(FlagList& list, const FlagValue& value) {
  const auto same = std::find_if(list.begin(), list.end(), [&](const FlagValue& f) { return f.flag == value.flag; });
  if (same != list.end()) {
    *same = value;
  } else {
    list.push_back(value);
  }
}

std::vector<std::string> flag_words(const FlagList& list) {
  std::vector<std::string> words;
  for (const auto& flag : list) {
    if (flag.unset) continue;
    words.push_back(flag.flag);
    words.insert(words.end(), flag.values.begin(), flag.values.end());
  }
  return words;
}

FlagList flag_list_of(const std::vector<std::string>& words) {
  FlagList list;
  for (const auto& word : words) {
    if (word.rfind("--", 0) == 0) {  // a flag given again replaces its earlier values, as on the command line
      list.erase(std::remove_if(list.begin(), list.end(), [&](const FlagValue& f) { return f.flag == word; }),
                 list.end());
      list.push_back({word, {}});
    } else {
      require(!list.empty(), "flag words start with a value: '" + word + "'");
      list.back().values.push_back(word);
    }
  }
  return list;
}

StudySpec parse_study_spec(const nlohmann::ordered_json& json, const std::string& source) {
  require(json.is_object(), source + ": expected a JSON object (a study specification)");
  check_fields(json, kTopFields, source);
  StudySpec spec;
  spec.json = json;
  if (json.contains("name")) {
    require(json["name"].is_string(), source + ": name: expected text");
    spec.name = json["name"].get<std::string>();
  }
  if (json.contains("description")) {
    require(json["description"].is_string(), source + ": description: expected text");
    spec.description = json["description"].get<std::string>();
  }
  if (json.contains("simulate")) spec.simulation = parse_simulation(json["simulate"], source + ": simulate");
  if (json.contains("cell_timeout_seconds")) {
    const auto& t = json["cell_timeout_seconds"];
    require(t.is_number() && t.get<double>() >= 0, source + ": cell_timeout_seconds: expected a number >= 0");
    spec.cell_timeout_seconds = t.get<double>();
  }
  Json top = json;
  top.erase("grids");
  const GridSpec shared = parse_grid(top, GridSpec{}, source + ":");
  if (!json.contains("grids")) {
    spec.grids = {shared};
  } else {
    const Json& grids = json["grids"];
    require(grids.is_array() && !grids.empty(), source + ": grids: expected a non-empty list of grid objects");
    for (size_t i = 0; i < grids.size(); ++i) {
      const std::string where = source + ": grids[" + std::to_string(i) + "]";
      require(grids[i].is_object(), where + ": expected an object");
      check_fields(grids[i], kGridFields, where);
      require(grids[i].contains("name") && grids[i]["name"].is_string() && !grids[i]["name"].get<std::string>().empty(),
              where + ": a grid needs a \"name\" (text)");
      GridSpec grid = parse_grid(grids[i], shared, where);
      grid.name = grids[i]["name"].get<std::string>();
      if (!grids[i].contains("exclude")) grid.exclude = shared.exclude;
      for (const auto& other : spec.grids) require(other.name != grid.name, where + ": the grid name appears twice");
      spec.grids.push_back(std::move(grid));
    }
  }
  return spec;
}

StudySpec load_study_spec(const std::string& path) {
  std::ifstream in(path);
  require(static_cast<bool>(in), path + ": cannot read the study specification");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  require(!in.bad(), path + ": cannot read the study specification");
  return parse_study_spec(parse_ordered_json_text(text, path), path);
}

}  // namespace distsgd::experiment
