// Gossiping SGD, pull variant (Jin et al. 2016): each iteration worker i fetches x_j from one random peer j
// (requested before the forward pass, so the transfer overlaps computation) and sets
// x_i <- (x_i + x_j) / 2 - eta * g_i, g_i the gradient at the x_i it had. Each worker serves pulls on its
// receiving threads from a consistent copy (under the model lock). Momentum: a local momentum-SGD optimizer
// per worker; the -eta*g part is its step.
#pragma once
#include "distsgd/algo/algorithm.hpp"

namespace distsgd::algo::decentralized {

std::unique_ptr<WorkerAlgorithm> make_pull_gossip(const WorkerSetup& setup);

}  // namespace distsgd::algo::decentralized
