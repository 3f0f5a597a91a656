// A collective one worker of a discrete-event simulation starts and later waits for, as the real workers do with
// comm::Work (AR-SGD's buckets and PowerSGD's messages, the outer loop's fragments): the launch counts the bytes the
// worker sends and traces the collective from launch to completion on the communication lane; a wait that finds it
// unfinished is a "wait" span. And PowerSGD's exchange (powersgd_model.hpp), shared by AR-SGD and DiLoCo.
#pragma once
#include <cstddef>
#include <cstdint>

#include "distsgd/sim/analytical/powersgd_model.hpp"
#include "distsgd/sim/des/context.hpp"
#include "distsgd/sim/engine/ring_collectives.hpp"

namespace distsgd::sim {

struct CollectiveWork {
  bool done = true;
  Next waiter;  // the worker's continuation, waiting for it
};

// `name`, followed by `index` unless that is SIZE_MAX, names it on the trace (the text is built only when tracing).
void launch_collective(DesContext& c, int64_t worker, CollectiveKind kind, double bytes, const char* name,
                       CollectiveWork& work, size_t index = SIZE_MAX);
// `next` at once when the work is done, else when it is.
void wait_for(DesContext& c, int64_t worker, CollectiveWork& work, Next next);

// PowerSGD's compressed exchange of one worker (algo/compression/powersgd.hpp), then `then`: the error feedback and
// P = M Q, the allreduces of the uncompressed tensors and of P, the orthonormalisation and Q = M^T P, the allreduce
// of Q, the approximation P Q^T. Each allreduce waits for the compute before it; the three products share the
// matmul time equally; the error feedback is a pass over the model (an update's cost). An empty message is not sent
// (the real code skips it too); one worker compresses and sends nothing. `work` is the worker's, free until then.
void powersgd_exchange(DesContext& c, int64_t worker, const PowerSgdStep& step, CollectiveWork& work, Next then);

}  // namespace distsgd::sim
