// `distsgd train --virtual` (spec/virtual-cluster.md): every worker and server of the run is an actor of this one
// process (sim/engine/actor_scheduler.hpp), each with its own model, flat buffers, optimizer state and data shard,
// running the algorithms' own code over the in-process transport (vcluster/virtual_communicator.hpp), which delivers
// each message at the time the simulated --cluster gives it. Each step's compute advances the worker's virtual clock by
// the --profile's times (data, forward, and each parameter's backward as autograd reaches it). The arithmetic is
// real; the time is simulated; the order of events is the cluster's, the same for a seed on every run.
#pragma once
#include "distsgd/core/config.hpp"
#include "distsgd/train/trainer.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>

namespace distsgd::train {

// Runs the virtual cluster and returns worker 0's summary (also in <out>/summary.json, with "virtual": true, the
// cluster and the profile). Throws distsgd::Error before starting anything when the profile or cluster is missing or
// malformed, or the run would not fit in memory; and when the run deadlocks, naming who waits for what.
nlohmann::json run_virtual_training(TrainConfig config, const TrainHooks& hooks = {});

}  // namespace distsgd::train
