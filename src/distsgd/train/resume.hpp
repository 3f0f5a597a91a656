// Resume beside checkpoints: a worker's state written to and restored from its run's checkpoint.
#pragma once
#include "distsgd/train/worker_state.hpp"

namespace distsgd::train {

// Restores parameters, buffers, momentum, RNG state and position from --resume. Call before anything is written
// to the run directory, so a bad --resume leaves nothing behind.
void restore_from_checkpoint(WorkerState& s);

// Writes the checkpoint of a single-process run now (distributed optimizer state is not checkpointed yet).
void save_checkpoint_now(WorkerState& s);

}  // namespace distsgd::train
