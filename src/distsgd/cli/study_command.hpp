// `distsgd study SPEC.json --out DIR` (or `--preset NAME`): runs a grid of training runs and writes DIR/results.csv
// and DIR/curves.csv (experiment/study_results.hpp); `distsgd report DIR` shows them.
#pragma once
#include <string>

namespace CLI {
class App;
}

namespace distsgd::cli {

struct StudyCommand {
  std::string spec;  // a specification file
  std::string preset;
  std::string out;  // default: runs/study-<name>
  bool list_presets = false;
  bool dry_run = false;
  bool retry_failed = false;
};

CLI::App* add_study_command(CLI::App& app, StudyCommand& command);
int run_study(const StudyCommand& command);

}  // namespace distsgd::cli
