// Runs a study's cells: writes DIR/study.json (the specification and its cells, which the report reads), takes the
// predictions (experiment/study_prediction.hpp), then every cell not finished yet, in
// order, each as `distsgd train ... --out DIR/cells/<id>`, with one progress line; results.csv and curves.csv are
// rewritten after each cell. A cell that fails is recorded as failed (with the reason) and the study goes on. Ctrl-C
// stops the running cell cleanly and the study with it; running the study again resumes: finished cells are kept, the
// interrupted one runs again.
#pragma once
#include "distsgd/experiment/study_grid.hpp"
#include "distsgd/experiment/study_spec.hpp"

#include <string>
#include <vector>

namespace distsgd::experiment {

// Returns the exit status: 0 when every cell ran (failed cells included), 130 when interrupted.
int run_study_cells(const std::string& study_dir, const StudySpec& spec, const std::vector<StudyCell>& cells,
                    bool retry_failed);

}  // namespace distsgd::experiment
