#include "distsgd/cli/given_flags.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>

#include "distsgd/train/options.hpp"

namespace distsgd::cli {

std::vector<std::string> given_flags(const CLI::App& command, const std::vector<std::string>& names) {
  std::vector<std::string> args;
  for (const auto& spec : train::train_options()) {
    if (std::find(names.begin(), names.end(), spec.flag) == names.end()) continue;
    const auto* option = command.get_option_no_throw(spec.flag);
    if (option == nullptr || option->count() == 0) continue;
    args.push_back(spec.flag);
    if (spec.arity == OptionSpec::Arity::kSwitch) continue;
    const auto& values = option->results();
    if (spec.arity == OptionSpec::Arity::kOne) {
      args.push_back(values.back());
    } else {
      args.insert(args.end(), values.begin(), values.end());
    }
  }
  return args;
}

}  // namespace distsgd::cli
