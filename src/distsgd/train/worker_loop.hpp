// The worker's training loop: data, forward, backward, the algorithm's step, and the stop rules (epochs, steps,
// time budget, target accuracy), with evaluation, checkpoints and the run report at their moments.
#pragma once
#include "distsgd/train/process.hpp"
#include "distsgd/train/trainer.hpp"

#include <nlohmann/json.hpp>

namespace distsgd::train {

// Trains on a started worker process and returns the run's summary.
nlohmann::json run_worker(Process& p, const TrainHooks& hooks);

}  // namespace distsgd::train
