#include "distsgd/cli/study_command.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/experiment/self_command.hpp"
#include "distsgd/experiment/study_grid.hpp"
#include "distsgd/experiment/study_presets.hpp"
#include "distsgd/experiment/study_runner.hpp"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>

namespace distsgd::cli {

using experiment::arguments_text;
using experiment::expand_study;
using experiment::load_study_spec;
using experiment::path_safe;
using experiment::preset_study_spec;
using experiment::run_study_cells;
using experiment::study_preset_names;
using experiment::study_presets;
using experiment::StudyCell;
using experiment::StudySpec;
namespace {

void print_cells(const std::vector<StudyCell>& cells) {
  size_t simulated = 0;
  for (const auto& cell : cells) {
    simulated += cell.simulated_only;
    std::cout << (cell.simulated_only ? "simulate " : "run      ") << cell.id << "\n         "
              << arguments_text(cell.arguments()) << "\n";
  }
  std::cout << cells.size() - simulated << " runs, " << simulated << " simulated only" << std::endl;
}

}  // namespace

CLI::App* add_study_command(CLI::App& app, StudyCommand& c) {
  auto* cmd = app.add_subcommand(
      "study",
      "run a grid of training runs (a spec file or --preset) into DIR: results.csv, curves.csv, a run directory per "
      "cell; resumable (run it again after Ctrl-C)");
  cmd->add_option("spec", c.spec, "study specification (JSON; README \"Studies and reports\")");
  cmd->add_option("--preset", c.preset, "a ready-made study: " + join(study_preset_names()));
  cmd->add_option("--out", c.out, "study directory (default: runs/study-<name>)");
  cmd->add_flag("--list-presets", c.list_presets, "list the presets and exit");
  cmd->add_flag("--dry-run", c.dry_run, "list the cells and their flags, run nothing");
  cmd->add_flag("--retry-failed", c.retry_failed, "run the cells that failed before again (default: keep them)");
  return cmd;
}

int run_study(const StudyCommand& c) {
  if (c.list_presets) {
    for (const auto& preset : study_presets()) std::cout << preset.name << ": " << preset.summary << "\n";
    std::cout.flush();
    return 0;
  }
  require(c.spec.empty() != c.preset.empty(), "distsgd study: give a specification file or --preset NAME (" +
                                                  join(study_preset_names()) + "), one of them");
  const std::string source = c.spec.empty() ? "preset " + c.preset : c.spec;
  const StudySpec spec = c.spec.empty() ? preset_study_spec(c.preset) : load_study_spec(c.spec);
  const auto cells = expand_study(spec, source);
  if (c.dry_run) {
    print_cells(cells);
    return 0;
  }
  const std::string dir = !c.out.empty() ? c.out : "runs/study-" + path_safe(spec.name.empty() ? "study" : spec.name);
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  require(!error, "cannot create the study directory " + dir + ": " + error.message());
  return run_study_cells(dir, spec, cells, c.retry_failed);
}

}  // namespace distsgd::cli
