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

#include <any>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace distsgd {

struct OptionSpec {
  enum class Arity { kSwitch, kOne, kMany };  // a flag without value, one value, or several (repeatable)

  std::string flag;  // "--staleness"
  std::string key;   // its name in config.json: "staleness"
  std::string help;
  std::string group;          // heading in --help
  std::string value_name;     // "INT", "FLOAT", "TEXT", "none|wfbp|multistep"
  std::string shown_default;  // the default as --help shows it; empty: from value()
  Arity arity = Arity::kOne;
  bool hidden = false;  // testing-only options stay out of --help
  // Parses the option's values (none for a switch) into the config; throws Error naming the flag.
  std::function<void(TrainConfig&, const std::vector<std::string>&)> parse;
  std::function<nlohmann::json(const TrainConfig&)> value;  // as config.json records it
  // Throws Error naming the flag when the config's value breaks the option's rule; null: every value is valid.
  std::function<void(const TrainConfig&)> check;

  std::string default_text() const;             // the value of a default TrainConfig, for --help
  bool is_default(const TrainConfig& c) const;  // the config holds the default value

  OptionSpec named(std::string json_key) && {
    key = std::move(json_key);
    return std::move(*this);
  }
  OptionSpec hide() && {
    hidden = true;
    return std::move(*this);
  }
  // A rule across settings that this option's value brings in (replaces `check`).
  OptionSpec checked(std::function<void(const TrainConfig&)> rule) && {
    check = std::move(rule);
    return std::move(*this);
  }
};

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
template <class T>
std::function<void(const TrainConfig&)> checker(const std::string& flag, const Rule<T>& rule,
                                                std::function<T(const TrainConfig&)> read) {
  if (!rule.holds) return nullptr;
  return [flag, rule, read](const TrainConfig& c) {
    const T value = read(c);
    require(rule.holds(value), flag + " " + rule.must + " (got " + text_of(value) + ")");
  };
}
}  // namespace detail

// An option held in a field of TrainConfig: one value, or (for std::vector<T>) one or more values.
template <class T>
OptionSpec field_option(std::string flag, T TrainConfig::*field, std::string help, Rule<T> rule = {}) {
  OptionSpec spec;
  spec.flag = flag;
  spec.key = key_of_flag(flag);
  spec.help = std::move(help);
  spec.value_name = value_name_of<T>();
  spec.parse = [flag, field](TrainConfig& c, const std::vector<std::string>& values) {
    require(values.size() == 1, flag + " takes one value");
    c.*field = parse_text<T>(flag, values[0]);
  };
  spec.value = [field](const TrainConfig& c) { return json_of(c.*field); };
  spec.check = detail::checker<T>(flag, rule, [field](const TrainConfig& c) { return c.*field; });
  return spec;
}

template <class T>
OptionSpec list_option(std::string flag, std::vector<T> TrainConfig::*field, std::string help,
                       Rule<std::vector<T>> rule = {}) {
  OptionSpec spec;
  spec.flag = flag;
  spec.key = key_of_flag(flag);
  spec.help = std::move(help);
  spec.value_name = value_name_of<T>();
  spec.arity = OptionSpec::Arity::kMany;
  spec.parse = [flag, field](TrainConfig& c, const std::vector<std::string>& values) {
    (c.*field).clear();
    for (const auto& text : values) (c.*field).push_back(parse_text<T>(flag, text));
  };
  spec.value = [field](const TrainConfig& c) { return nlohmann::json(c.*field); };
  spec.check = detail::checker<std::vector<T>>(flag, rule, [field](const TrainConfig& c) { return c.*field; });
  return spec;
}

// A flag without value that sets a boolean field to `when_given` (e.g. --trace, or --no-checkpoint: false).
OptionSpec switch_option(std::string flag, bool TrainConfig::*field, bool when_given, std::string key,
                         std::string help);

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
    spec_.check = detail::checker<T>(
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
