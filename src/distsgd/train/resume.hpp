// Resume beside checkpoints: every process's state written to, and restored from, the run's checkpoint directory
// (checkpoint_files.hpp has the format).
//
// When: every worker writes its file after the same global step (each --checkpoint-every-steps steps, and at epoch
// ends); worker 0 asks the servers through the store (they write theirs within a poll interval) and completes the
// checkpoint (manifest, `latest`) once every file is in. Synchronous algorithms (AR-SGD, BSP, DGC on either) are in
// lockstep, and worker 0 waits for the servers before its next push, so no round of the next step can complete
// first: the checkpoint is one consistent step boundary and a resumed run repeats the next steps bit for bit.
// Asynchronous parameter-server and decentralized workers write at the same step of their own, the servers when
// they see the request: a state the run could have been in, up to the messages in flight (gradients not yet
// applied, push-sum mass in transit), so a resumed run continues from it but is not bit-identical.
#pragma once
#include "distsgd/train/worker_state.hpp"

namespace distsgd::algo {
class ServerAlgorithm;
}

namespace distsgd::train {

// --resume, in a worker, before its algorithm is made: checks the checkpoint and restores parameters and buffers
// (an algorithm may copy the parameters when it is made). Call before anything is written to the run directory,
// so a bad --resume leaves nothing behind.
void restore_parameters(WorkerState& s);
// ... and once the algorithm is made: its state, the RNG and the position in training.
void restore_algorithm_state(WorkerState& s);

// Every worker at the same step boundary: writes its file of checkpoint <global step>; worker 0 then completes it
// (synchronous algorithms: waits for the others' files; others: later, in poll_checkpoint).
void save_checkpoint_now(WorkerState& s);
// Worker 0, after every step: completes its pending checkpoint once every file is in (a few store look-ups).
void poll_checkpoint(WorkerState& s);
// Worker 0, after the last evaluation: waits (up to --timeout) for a pending checkpoint's files.
void finish_checkpoints(WorkerState& s);

// A server process: restores its state (--resume) and serves, writing its file of each checkpoint worker 0 asks
// for. Returns what serve() returned.
nlohmann::json serve_with_checkpoints(Process& p, algo::ServerAlgorithm& server);

}  // namespace distsgd::train
