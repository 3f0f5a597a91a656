// AD-PSGD (Lian et al. 2018): a compute thread (the training loop) and a communication thread per active worker.
// Odd ranks are active, even ranks passive; edges join only the two sides (bipartite exponential graph), so two
// exchanges can never wait on each other. Each iteration an active worker sends its x_i to its next passive
// neighbour, the neighbour's receiving thread sets x_j <- (x_j + x_i)/2 under its model lock and replies with its
// x_j from before; the active worker then sets x_i <- x_i + (x_j - x_i,sent)/2 under its lock (which is
// (x_i + x_j)/2 plus any gradient applied meanwhile). The model lives in a buffer of its own; the compute thread
// copies it into the parameters before each forward pass (so no averaging ever changes a tensor autograd saved)
// and applies the (possibly stale) gradient to it under the lock. An active worker's exchange of iteration t
// overlaps the computation of iteration t+1, whose update waits for it (staleness at most one exchange).
// Momentum: a local momentum-SGD optimizer per worker, applied to the model buffer; momentum is never averaged.
#pragma once
#include "distsgd/algo/algorithm.hpp"

namespace distsgd::algo::decentralized {

std::unique_ptr<WorkerAlgorithm> make_adpsgd(const WorkerSetup& setup);

}  // namespace distsgd::algo::decentralized
