#include "distsgd/train/resume_settings.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/train/options.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace distsgd::train {
namespace fs = std::filesystem;
namespace {

// Flags that extend a run or steer how it executes without changing what it trains.
const std::vector<std::string> kMayChange = {"--resume",
                                             "--out",
                                             "--epochs",
                                             "--max-steps",
                                             "--time-budget",
                                             "--target-accuracy",
                                             "--target-loss",
                                             "--timeout",
                                             "--threads",
                                             "--prefetch",
                                             "--eval-batch-size",
                                             "--progress-seconds",
                                             "--checkpoint-every-steps",
                                             "--no-checkpoint",
                                             "--trace",
                                             "--evals-per-epoch"};

// The text the command line would carry for a recorded value: a string as is, a pair (RANK:FACTOR) joined by ':'.
std::string text_of_json(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array()) {
    std::string joined;
    for (const auto& part : value) joined += (joined.empty() ? "" : ":") + text_of_json(part);
    return joined;
  }
  return value.dump();
}

// Sets one option of `config` from its config.json value, as the command line would. Unless `even_default`, a value
// equal to the default is left out, as a flag not given (an algorithm's setting given explicitly can mean more than
// its value).
void apply_value(const OptionSpec& spec, TrainConfig& config, const nlohmann::json& value, bool even_default) {
  if (value.is_null() || (!even_default && value == spec.value(TrainConfig{}))) return;
  if (spec.arity == OptionSpec::Arity::kSwitch) {
    if (value != spec.value(TrainConfig{})) spec.parse(config, {});
    return;
  }
  std::vector<std::string> texts;
  if (value.is_array() && spec.arity == OptionSpec::Arity::kMany) {
    for (const auto& item : value) texts.push_back(text_of_json(item));
  } else {
    texts.push_back(text_of_json(value));
  }
  spec.parse(config, texts);
}

}  // namespace

void take_settings_of_run(TrainConfig& config, const std::function<bool(const std::string& flag)>& given) {
  if (config.resume.empty()) return;
  const fs::path recorded_path = fs::path(config.resume) / "config.json";
  if (!fs::is_directory(config.resume) || !fs::exists(recorded_path)) return;
  const auto recorded = read_json_file(recorded_path.string(), "the run's configuration");
  TrainConfig base;
  for (const auto& spec : train_options()) {
    if (spec.key == "resume" || spec.key == "out" || spec.key == "overwrite" || !recorded.contains(spec.key)) continue;
    try {
      apply_value(spec, base, recorded[spec.key], false);
    } catch (const Error& e) {
      throw Error(recorded_path.string() + ": " + e.what());
    }
  }
  for (const auto& spec : train_options()) {
    if (!given(spec.flag)) continue;
    const bool may_change = std::find(kMayChange.begin(), kMayChange.end(), spec.flag) != kMayChange.end();
    const auto wanted = spec.value(config), had = spec.value(base);
    if (may_change) {
      if (spec.key != "out" && spec.key != "resume") apply_value(spec, base, wanted, true);
      continue;
    }
    require(wanted == had, "--resume " + config.resume + ": " + spec.flag + " " + text_of_json(wanted) +
                               " differs from the run's " + text_of_json(had) +
                               " (config.json); a resumed run keeps its settings, except " + join(kMayChange));
  }
  base.resume = config.resume;
  base.out = config.out.empty() ? config.resume : config.out;
  config = base;
}

std::optional<std::string> finished_run_note(const TrainConfig& config) {
  if (config.resume.empty() || !fs::is_directory(config.resume)) return std::nullopt;
  const fs::path summary_path = fs::path(config.resume) / "summary.json";
  if (!fs::exists(summary_path)) return std::nullopt;
  const auto summary = read_json_file(summary_path.string(), "the run's summary");
  const std::string reason = summary.value("stop_reason", std::string());
  const auto steps = summary.value("steps", int64_t{0});
  const double epochs_done = summary.value("epochs", 0.0);
  bool more = false;
  if (reason == "epochs" || reason == "max_steps") {
    const double steps_per_epoch = epochs_done > 0 ? static_cast<double>(steps) / epochs_done : 0;
    const auto by_epochs = static_cast<int64_t>(std::llround(static_cast<double>(config.epochs) * steps_per_epoch));
    const int64_t limit = config.max_steps > 0 ? std::min(by_epochs, config.max_steps) : by_epochs;
    more = limit > steps;
  } else if (reason == "time_budget") {
    more = config.time_budget == 0 || config.time_budget > summary.value("wall_seconds", 0.0);
  } else if (reason == "target_accuracy") {
    more = config.target_accuracy == 0 || config.target_accuracy > summary.value("test_accuracy", 0.0);
  }
  if (more) return std::nullopt;
  return "run " + config.resume + " already ended (" + (reason.empty() ? "finished" : reason) + " at step " +
         std::to_string(steps) + ")" +
         (reason == "diverged" ? "; it diverged, so there is nothing to continue"
                               : "; nothing to resume: give a larger --epochs, --max-steps, --time-budget or "
                                 "--target-accuracy to train it further") +
         "; its files are unchanged";
}

}  // namespace distsgd::train
