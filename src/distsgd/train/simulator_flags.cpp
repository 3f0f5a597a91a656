#include "distsgd/train/simulator_flags.hpp"

#include <nlohmann/json.hpp>

#include "distsgd/catalog/algorithm_catalog.hpp"
#include "distsgd/core/option.hpp"
#include "distsgd/sim/calibration/measured_point_model.hpp"
#include "distsgd/train/options.hpp"

namespace distsgd::train {
namespace {

// One item of a recorded list as its flag's value: a RANK:FACTOR pair (--slowdown, recorded as [rank, factor]) as
// the flag takes it, a string as itself.
std::string word_of_item(const nlohmann::json& item) {
  if (item.is_array() && item.size() == 2) {
    return text_of(item[0].get<int64_t>()) + ":" + text_of(item[1].get<double>());
  }
  return item.is_string() ? item.get<std::string>() : item.dump();
}

// A recorded value as the words of its flag (a list repeats the flag; false and null are absent).
std::vector<std::string> words_of_json(const std::string& flag, const nlohmann::json& value) {
  if (value.is_boolean()) return value.get<bool>() ? std::vector<std::string>{flag} : std::vector<std::string>{};
  if (value.is_array()) {
    std::vector<std::string> words;
    for (const auto& item : value) words.insert(words.end(), {flag, word_of_item(item)});
    return words;
  }
  if (value.is_null()) return {};
  return {flag, value.is_string() ? value.get<std::string>() : value.dump()};
}

}  // namespace

std::vector<std::string> simulator_flags_of_run(const nlohmann::json& config) {
  const std::string algorithm = config.value("algorithm", std::string());
  std::vector<std::string> flags;
  for (const auto& spec : train_options()) {
    if (!sim::is_point_setting(spec.flag) || !config.contains(spec.key)) continue;
    // A run without servers may record --servers 0 (train takes it); the simulator's count is of servers it has.
    if (spec.flag == "--servers" && !catalog::needs_servers(algorithm)) continue;
    const auto words = words_of_json(spec.flag, config[spec.key]);
    flags.insert(flags.end(), words.begin(), words.end());
  }
  return flags;
}

}  // namespace distsgd::train
