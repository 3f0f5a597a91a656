// Training, from the outside: run_training starts this process (process.hpp) and runs its part, a worker
// (worker_loop.hpp) or a server (the algorithm's server side).
#pragma once
#include "distsgd/core/config.hpp"

#include <nlohmann/json.hpp>

#include <functional>

namespace distsgd::train {

struct StepRecord {
  int64_t global_step = 0;  // 0-based index of the step just done
  int64_t epoch = 0;
  double loss = 0;  // training loss of the step's batch
  double lr = 0;
};

struct TrainHooks {
  std::function<void(const StepRecord&)> on_step;  // after every step (tests, tools)
};

// Runs training as configured and returns the summary (also written to <out>/summary.json).
// Throws distsgd::Error for invalid configurations and bad input.
nlohmann::json run_training(TrainConfig config, const TrainHooks& hooks = {});

// The run directory to use when --out is not given: runs/<model>-<dataset>-<YYYYmmdd-HHMMSS>.
std::string default_run_dir(const TrainConfig& config);

}  // namespace distsgd::train
