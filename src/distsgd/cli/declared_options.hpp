// The command line of declared options (core/option.hpp): one CLI11 option per declaration. CLI11 collects the
// text; the declaration parses it, so errors name the flag and the harness's in-process parsing agrees with it.
#pragma once
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "distsgd/core/option.hpp"

namespace distsgd::cli {

// `spec` and `config` must outlive `cmd`'s parsing (the callbacks refer to both).
template <class Config>
CLI::Option* add_declared_option(CLI::App& cmd, const BasicOptionSpec<Config>& spec, Config& config) {
  const std::string help = spec.hidden ? "" : spec.help;
  CLI::Option* option = nullptr;
  switch (spec.arity) {
    case OptionArity::kSwitch:
      option = cmd.add_flag_callback(
          spec.flag, [&config, &spec] { spec.parse(config, {}); }, help);
      break;
    case OptionArity::kOne:
      option = cmd.add_option_function<std::string>(
          spec.flag, [&config, &spec](const std::string& text) { spec.parse(config, {text}); }, help);
      option->type_name(spec.value_name)->default_str(spec.default_text());
      break;
    case OptionArity::kMany:
      option = cmd.add_option_function<std::vector<std::string>>(
          spec.flag, [&config, &spec](const std::vector<std::string>& texts) { spec.parse(config, texts); }, help);
      option->type_name(spec.value_name);
      if (spec.delimiter) option->delimiter(spec.delimiter);
      break;
  }
  // CLI11 hides an option of group "": ungrouped ones are listed under its usual heading.
  option->group(spec.hidden ? "" : spec.group.empty() ? "Options" : spec.group);
  return option;
}

template <class Config>
void add_declared_options(CLI::App& cmd, const std::vector<BasicOptionSpec<Config>>& table, Config& config) {
  for (const auto& spec : table) add_declared_option(cmd, spec, config);
}

}  // namespace distsgd::cli
