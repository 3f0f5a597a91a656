// The worker's evaluation policy: on which parameters the test set is evaluated (the workers' shared model, the
// servers' x~, or for decentralized algorithms the workers' average and worker 0's own), the parameter variance
// across workers, and the metrics record of each evaluation. Every worker takes part (the sums are collectives).
#pragma once
#include "distsgd/train/worker_state.hpp"

namespace distsgd::train {

// Evaluates, records the evaluation in the state, appends it to metrics.jsonl and logs it (worker 0).
void evaluate_and_record(WorkerState& s);

}  // namespace distsgd::train
