#include "distsgd/experiment/study_runner.hpp"

#include "distsgd/comm/signal_pipe.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/core/timer.hpp"
#include "distsgd/experiment/run_directory.hpp"
#include "distsgd/experiment/self_command.hpp"
#include "distsgd/experiment/study_cell_process.hpp"
#include "distsgd/experiment/study_cell_record.hpp"
#include "distsgd/experiment/study_prediction.hpp"
#include "distsgd/experiment/study_progress.hpp"
#include "distsgd/experiment/study_results.hpp"

#include <signal.h>

#include <iostream>

namespace distsgd::experiment {
namespace {

std::string timeout_reason(double seconds) {
  return "took longer than the spec's cell_timeout_seconds (" + StudyProgress::duration(seconds) + ")";
}

// How a finished run ended, from its exit status, its log and its run directory.
CellRecord record_of(const StudyCell& cell, const CellProcessResult& result, const std::string& study_dir,
                     double seconds, double timeout) {
  CellRecord record;
  record.arguments = cell.arguments();
  record.seconds = seconds;
  const bool summary = finished_summary(cell_directory(study_dir, cell)).has_value();
  if (result.timed_out) {
    record.status = "failed";
    record.reason = timeout_reason(timeout);
  } else if (result.exit_status != 0) {
    record.status = "failed";
    record.reason = error_line_of(cell_log_path(study_dir, cell));
  } else if (!summary) {
    record.status = "failed";
    record.reason = "the run ended without writing summary.json (see " + cell_log_path(study_dir, cell) + ")";
  } else {
    record.status = "done";
  }
  return record;
}

// DIR/study.json: the specification as given and the cells it expanded to (the report reads the names from it).
nlohmann::ordered_json study_json(const StudySpec& spec, const std::vector<StudyCell>& cells) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& cell : cells) {
    nlohmann::ordered_json axes = nlohmann::ordered_json::array();
    for (const auto& [axis, label] : cell.axis_labels) axes.push_back({{"axis", axis}, {"label", label}});
    list.push_back({{"id", cell.id},
                    {"grid", cell.grid},
                    {"label", cell.label},
                    {"axes", axes},
                    {"arguments", cell.arguments()},
                    {"simulated_only", cell.simulated_only}});
  }
  return {{"name", spec.name}, {"description", spec.description}, {"spec", spec.json}, {"cells", list}};
}

}  // namespace

int run_study_cells(const std::string& study_dir, const StudySpec& spec, const std::vector<StudyCell>& cells,
                    bool retry_failed) {
  write_json_atomically(study_dir + "/study.json", study_json(spec, cells));
  const auto predictions = predict_cells(cells, spec.simulation, study_dir);
  std::vector<const StudyCell*> to_run;
  std::vector<double> earlier_seconds;
  size_t measured = 0, finished = 0, failed = 0;
  for (const auto& cell : cells) {
    if (cell.simulated_only) continue;
    ++measured;
    const auto record = read_cell_record(study_dir, cell);
    if (record && (record->status == "done" || !retry_failed)) {
      ++finished;
      failed += record->status == "failed";
      earlier_seconds.push_back(record->seconds);
    } else {
      to_run.push_back(&cell);
    }
  }
  write_study_results(study_dir, cells, predictions);
  if (finished > 0) {
    std::cerr << spec.command << ": " << finished << " of " << measured
              << " cells finished earlier (kept); running the other " << to_run.size() << std::endl;
  }

  comm::SignalPipe signals({SIGINT, SIGTERM, SIGCHLD}, {SIGPIPE});
  StudyProgress progress(measured, finished, failed, earlier_seconds, std::cerr, stderr_is_terminal(), spec.command);
  bool interrupted = false;
  for (const StudyCell* cell : to_run) {
    if (interrupt_pending(signals)) {
      interrupted = true;
      break;
    }
    remove_cell_record(study_dir, *cell);
    progress.start((cell->grid.empty() ? "" : cell->grid + ": ") + cell->label);
    std::vector<std::string> args{"train"};
    const auto words = cell->arguments();
    args.insert(args.end(), words.begin(), words.end());
    args.insert(args.end(), {"--out", cell_directory(study_dir, *cell), "--overwrite"});
    const auto start = Clock::now();
    const auto result = run_cell_process(args, cell_log_path(study_dir, *cell), spec.cell_timeout_seconds, signals,
                                         [&] { progress.refresh(); });
    if (result.interrupted) {
      interrupted = true;
      break;
    }
    const auto record = record_of(*cell, result, study_dir, seconds_since(start), spec.cell_timeout_seconds);
    write_cell_record(study_dir, *cell, record);
    if (record.status == "failed") progress.note(spec.command + ": " + cell->label + " failed: " + record.reason);
    progress.finish(record.status == "failed", record.seconds);
    failed += record.status == "failed";
    write_study_results(study_dir, cells, predictions);
  }
  progress.end();
  write_study_results(study_dir, cells, predictions);
  if (interrupted) {
    std::cerr << spec.command << ": interrupted; finished cells are kept in " << study_dir
              << " (results.csv); run the same command again to resume" << std::endl;
    return 130;
  }
  std::cerr << spec.command << ": " << measured << " cells, " << (measured - failed) << " done, " << failed
            << " failed; " << study_dir << "/results.csv and curves.csv; next: distsgd report " << study_dir
            << std::endl;
  return 0;
}

}  // namespace distsgd::experiment
