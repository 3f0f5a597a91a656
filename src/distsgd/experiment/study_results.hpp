// The study's tables, rewritten (atomically) after every cell so they always hold what has finished:
//   DIR/results.csv: one row per cell: cell, grid, label, status (done, failed, pending, simulated), reason,
//     axis.<name> for every axis, arguments, run_dir, cell_seconds, algorithm, workers, servers, batch_size, net (of
//     every cell, run or not), predicted.* (the simulator's figures for the same configuration), then every figure
//     of the run's summary.json under its own name (nested ones as seconds_per_iteration.forward; lists such as
//     per_worker stay in summary.json).
//   DIR/curves.csv: one row per evaluation of every run (metrics.jsonl): cell, grid, label, axis.<name>, then the
//     record's figures (epoch, step, wall_seconds, train_seconds, samples, test_accuracy, test_loss, ...).
#pragma once
#include "distsgd/experiment/study_grid.hpp"
#include "distsgd/experiment/study_prediction.hpp"

#include <map>
#include <string>
#include <vector>

namespace distsgd::experiment {

void write_study_results(const std::string& study_dir, const std::vector<StudyCell>& cells,
                         const std::map<std::string, CellPrediction>& predictions);

}  // namespace distsgd::experiment
