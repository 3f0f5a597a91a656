// Where a study keeps each cell (DIR/cells/<id>/, an ordinary run directory; DIR/logs/<id>.log, its output) and the
// record of how its run ended (DIR/cells/<id>/study_cell.json). A cell with a record made by the same arguments is
// finished and never runs again; a cell without one (never started, or interrupted) runs.
#pragma once
#include "distsgd/experiment/study_grid.hpp"

#include <optional>
#include <string>
#include <vector>

namespace distsgd::experiment {

struct CellRecord {
  std::string status;  // "done" or "failed"
  std::string reason;  // why it failed
  std::vector<std::string> arguments;
  double seconds = 0;  // the run's wall time, start-up included
};

std::string cell_directory(const std::string& study_dir, const StudyCell& cell);
std::string cell_log_path(const std::string& study_dir, const StudyCell& cell);

// The record of the cell's last run, when it was made with the cell's present arguments (and, for a run recorded
// done, its run directory still has a complete summary.json).
std::optional<CellRecord> read_cell_record(const std::string& study_dir, const StudyCell& cell);
void write_cell_record(const std::string& study_dir, const StudyCell& cell, const CellRecord& record);
// Before a run starts: an interrupted run must not look finished.
void remove_cell_record(const std::string& study_dir, const StudyCell& cell);

}  // namespace distsgd::experiment
