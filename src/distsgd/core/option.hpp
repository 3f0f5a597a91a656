// Declared options. One declaration per option drives the command line (cli/), validation, config.json and
// --help: its flag, help, group, how its text is parsed, the rule its value must keep, and its JSON form.
// Where the value lives is the declaration's business: a field of TrainConfig (the options of training itself,
// declared in train/options.cpp with field_option), or the config's store of algorithm settings (options an
// algorithm declares in its own file with StoredOption, so that adding one touches nothing outside algo/).
#pragma once
#include "distsgd/core/config.hpp"
#include "distsgd/core/enum_names.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <any>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace distsgd {

enum class OptionArity { kSwitch, kOne, kMany };  // a flag without value, one value, or several (repeatable)

// An option of a command whose settings are a `Config`: TrainConfig for train (and every command that hands train
// flags on), sim::SimulatorSettings for simulate. One table of these drives both the command line and the harness's
// in-process parsing (parse_option_words), so a flag is declared once.
template <class Config>
struct BasicOptionSpec {
  using Arity = OptionArity;

  std::string flag;  // "--staleness"
  std::string key;   // its name in config.json: "staleness"
  std::string help;
  std::string group;          // heading in --help
  std::string value_name;     // "INT", "FLOAT", "TEXT", "none|wfbp|multistep"
  std::string shown_default;  // the default as --help shows it; empty: from value()
  Arity arity = Arity::kOne;
  char delimiter = 0;   // kMany: one value may hold several, split at this character ("--workers 1,2,4")
  bool hidden = false;  // testing-only options stay out of --help
  // Parses the option's values (none for a switch) into the config; throws Error naming the flag.
  std::function<void(Config&, const std::vector<std::string>&)> parse;
  std::function<nlohmann::json(const Config&)> value;  // as config.json records it
  // Throws Error naming the flag when the config's value breaks the option's rule; null: every value is valid.
  std::function<void(const Config&)> check;

  // The value of a default Config, for --help.
  std::string default_text() const {
    if (!shown_default.empty()) return shown_default;
    const Config defaults;  // default-initialised, not Config{}: GCC 12 takes an aggregate's base for uninitialised
    const auto j = value(defaults);
    return j.is_string() ? j.template get<std::string>() : j.dump();
  }
  bool is_default(const Config& c) const {
    const Config defaults;
    return value(c) == value(defaults);
  }

  BasicOptionSpec named(std::string json_key) && {
    key = std::move(json_key);
    return std::move(*this);
  }
  BasicOptionSpec hide() && {
    hidden = true;
    return std::move(*this);
  }
  BasicOptionSpec split_at(char separator) && {
    delimiter = separator;
    return std::move(*this);
  }
  BasicOptionSpec shown_as(std::string name) && {
    value_name = std::move(name);
    return std::move(*this);
  }
  // A rule across settings that this option's value brings in (replaces `check`).
  BasicOptionSpec checked(std::function<void(const Config&)> rule) && {
    check = std::move(rule);
    return std::move(*this);
  }
};

using OptionSpec = BasicOptionSpec<TrainConfig>;

// "--mlp-width" -> "mlp_width".
std::string key_of_flag(const std::string& flag);

// A rule a value must keep, and what the error says when it does not: "<flag> <must> (got <value>)".
template <class T>
struct Rule {
  std::function<bool(const T&)> holds;
  std::string must;
};

// Text to value, with one clear error naming the flag.
int64_t parse_int(const std::string& flag, const std::string& text);
uint64_t parse_unsigned(const std::string& flag, const std::string& text);
double parse_double(const std::string& flag, const std::string& text);

template <class T>
T parse_text(const std::string& flag, const std::string& text) {
  if constexpr (std::is_enum_v<T>) {
    if (auto value = enum_from_name<T>(text)) return *value;
    throw Error(flag + " must be " + join_or(enum_name_list<T>()) + " (got '" + text + "')");
  } else if constexpr (std::is_same_v<T, std::string>) {
    return text;
  } else if constexpr (std::is_same_v<T, double>) {
    return parse_double(flag, text);
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    return parse_unsigned(flag, text);
  } else {
    static_assert(std::is_same_v<T, int64_t>, "options hold int64_t, uint64_t, double, text or an enum");
    return parse_int(flag, text);
  }
}

template <class T>
nlohmann::json json_of(const T& value) {
  if constexpr (std::is_enum_v<T>) {
    return name_of(value);
  } else {
    return value;
  }
}

template <class T>
std::string value_name_of() {
  if constexpr (std::is_enum_v<T>)
    return join(enum_name_list<T>(), "|");
  else if constexpr (std::is_same_v<T, std::string>)
    return "TEXT";
  else if constexpr (std::is_same_v<T, double>)
    return "FLOAT";
  else
    return "INT";
}

template <class T>
std::string text_of(const T& value) {
  const auto j = json_of(value);
  return j.is_string() ? j.template get<std::string>() : j.dump();
}

namespace detail {
template <class T, class Config>
std::function<void(const Config&)> checker(const std::string& flag, const Rule<T>& rule,
                                           std::function<T(const Config&)> read) {
  if (!rule.holds) return nullptr;
  return [flag, rule, read](const Config& c) {
    const T value = read(c);
    if constexpr (std::is_same_v<T, std::string>) {
      require(rule.holds(value), flag + " " + rule.must + " (got '" + value + "')");
    } else {
      require(rule.holds(value), flag + " " + rule.must + " (got " + text_of(value) + ")");
    }
  };
}
}  // namespace detail

// An option held in a field of the Config: one value.
template <class T, class Config>
BasicOptionSpec<Config> field_option(std::string flag, T Config::*field, std::string help, Rule<T> rule = {}) {
  BasicOptionSpec<Config> spec;
  spec.flag = flag;
  spec.key = key_of_flag(flag);
  spec.help = std::move(help);
  spec.value_name = value_name_of<T>();
  spec.parse = [flag, field](Config& c, const std::vector<std::string>& values) {
    require(values.size() == 1, flag + " takes one value");
    c.*field = parse_text<T>(flag, values[0]);
  };
  spec.value = [field](const Config& c) { return json_of(c.*field); };
  spec.check = detail::checker<T, Config>(flag, rule, [field](const Config& c) { return c.*field; });
  return spec;
}

// An option held in a std::vector<T> field: one or more values (repeatable; each given list replaces the default).
template <class T, class Config>
BasicOptionSpec<Config> list_option(std::string flag, std::vector<T> Config::*field, std::string help,
                                    Rule<std::vector<T>> rule = {}) {
  BasicOptionSpec<Config> spec;
  spec.flag = flag;
  spec.key = key_of_flag(flag);
  spec.help = std::move(help);
  spec.value_name = value_name_of<T>();
  spec.arity = OptionArity::kMany;
  spec.parse = [flag, field](Config& c, const std::vector<std::string>& values) {
    (c.*field).clear();
    for (const auto& text : values) (c.*field).push_back(parse_text<T>(flag, text));
  };
  spec.value = [field](const Config& c) { return nlohmann::json(c.*field); };
  spec.check = detail::checker<std::vector<T>, Config>(flag, rule, [field](const Config& c) { return c.*field; });
  return spec;
}

// A flag without value that sets a boolean field to `when_given` (e.g. --trace, or --no-checkpoint: false).
template <class Config>
BasicOptionSpec<Config> switch_option(std::string flag, bool Config::*field, bool when_given, std::string key,
                                      std::string help) {
  BasicOptionSpec<Config> spec;
  spec.flag = std::move(flag);
  spec.key = std::move(key);
  spec.help = std::move(help);
  spec.arity = OptionArity::kSwitch;
  spec.parse = [field, when_given](Config& c, const std::vector<std::string>&) { c.*field = when_given; };
  spec.value = [field](const Config& c) { return nlohmann::json(c.*field); };
  return spec;
}

// The options among `table` named by `words` ("--staleness", "3", "--workers", "1,2,4", "--trace", ...) parsed into
// `config` without a command-line library (the harness builds settings this way in-process), as the command line
// parses them: a repeated list flag gathers every value given; then every option's rule is checked. Throws Error
// naming an unknown flag, a missing value or a broken rule.
template <class Config>
void parse_option_words(const std::vector<BasicOptionSpec<Config>>& table, const std::vector<std::string>& words,
                        Config& config) {
  std::vector<std::pair<const BasicOptionSpec<Config>*, std::vector<std::string>>> lists;  // in order of first use
  for (size_t i = 0; i < words.size();) {
    const std::string& flag = words[i++];
    const auto spec = std::find_if(table.begin(), table.end(), [&](const auto& s) { return s.flag == flag; });
    require(spec != table.end(), "unknown option '" + flag + "'");
    const auto is_value = [&](size_t j) { return j < words.size() && words[j].rfind("--", 0) != 0; };
    if (spec->arity == OptionArity::kSwitch) {
      spec->parse(config, {});
    } else if (spec->arity == OptionArity::kOne) {
      require(is_value(i), flag + " needs a value");
      spec->parse(config, {words[i++]});
    } else {
      require(is_value(i), flag + " needs at least one value");
      auto list = std::find_if(lists.begin(), lists.end(), [&](const auto& l) { return l.first == &*spec; });
      if (list == lists.end()) list = lists.insert(lists.end(), {&*spec, {}});
      for (; is_value(i); ++i) {
        for (auto& part : spec->delimiter ? split(words[i], spec->delimiter) : std::vector<std::string>{words[i]})
          list->second.push_back(std::move(part));
      }
    }
  }
  for (const auto& [spec, values] : lists) spec->parse(config, values);
  for (const auto& spec : table) {
    if (spec.check) spec.check(config);
  }
}

// Whether `table` declares `flag`.
template <class Config>
bool declares_flag(const std::vector<BasicOptionSpec<Config>>& table, const std::string& flag) {
  return std::any_of(table.begin(), table.end(), [&](const auto& spec) { return spec.flag == flag; });
}

// An option an algorithm declares in its own file, held in TrainConfig::algorithm_settings. Declare it once at
// namespace scope, list its spec() in the AlgorithmInfo of every algorithm that takes it, and read it with of():
//   const StoredOption<int64_t> kStaleness{"--staleness", 10, "SSP: staleness bound s", {at_least(0)}};
//   ... kStaleness.of(config) ...
template <class T>
class StoredOption {
 public:
  enum Visibility { kShown, kHidden };  // hidden: testing-only options, not in --help

  StoredOption(std::string flag, T default_value, std::string help, Rule<T> rule = {}, Visibility visibility = kShown)
      : default_(default_value) {
    spec_.flag = flag;
    spec_.hidden = visibility == kHidden;
    spec_.key = key_of_flag(flag);
    spec_.help = std::move(help);
    spec_.value_name = value_name_of<T>();
    const std::string key = spec_.key;
    spec_.parse = [flag, key](TrainConfig& c, const std::vector<std::string>& values) {
      require(values.size() == 1, flag + " takes one value");
      c.algorithm_settings[key] = parse_text<T>(flag, values[0]);
    };
    spec_.value = [key, default_value](const TrainConfig& c) { return json_of(read(c, key, default_value)); };
    spec_.check = detail::checker<T, TrainConfig>(
        flag, rule, [key, default_value](const TrainConfig& c) { return read(c, key, default_value); });
  }

  T of(const TrainConfig& c) const { return read(c, spec_.key, default_); }
  // The run set it (on the command line, or set()), even to its default value.
  bool given(const TrainConfig& c) const { return c.algorithm_settings.count(spec_.key) > 0; }
  void set(TrainConfig& c, T value) const { c.algorithm_settings[spec_.key] = value; }
  const OptionSpec& spec() const { return spec_; }

 private:
  static T read(const TrainConfig& c, const std::string& key, const T& default_value) {
    const auto it = c.algorithm_settings.find(key);
    return it == c.algorithm_settings.end() ? default_value : std::any_cast<T>(it->second);
  }

  T default_;
  OptionSpec spec_;
};

// Common rules.
template <class T>
Rule<T> at_least(T low) {
  return {[low](const T& v) { return v >= low; }, "must be at least " + text_of(low)};
}
template <class T>
Rule<T> positive() {
  return {[](const T& v) { return v > 0; }, "must be positive"};
}
template <class T>
Rule<T> non_negative() {
  return {[](const T& v) { return v >= 0; }, "must not be negative"};
}
// [low, high]
template <class T>
Rule<T> within(T low, T high) {
  return {[low, high](const T& v) { return v >= low && v <= high; },
          "must be in [" + text_of(low) + ", " + text_of(high) + "]"};
}

}  // namespace distsgd
