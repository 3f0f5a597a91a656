// The run report: every worker's time split, steps and rate gathered across workers, the algorithm's and the
// servers' own figures, written by worker 0 to summary.json (and trace.json with --trace).
#pragma once
#include "distsgd/train/worker_state.hpp"

#include <nlohmann/json.hpp>

namespace distsgd::train {

// A collective: every worker calls it after finish(). Returns the summary (written by worker 0).
nlohmann::json report_run(WorkerState& s);

}  // namespace distsgd::train
