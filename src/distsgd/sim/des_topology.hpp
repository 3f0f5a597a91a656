// Who talks to whom in the decentralized algorithms: the same pure functions of (rank, n, t[, seed]) as
// algo/decentralized/topology.cpp (which sim/ cannot include: it sits above sim in the layers), so the simulated
// workers pick the peers the real ones pick, hot spots included.
#pragma once
#include <cstdint>
#include <vector>

namespace distsgd::sim {

// Hop lengths 2^k < n of the exponential graph (SGP).
int64_t exponential_hops(int64_t n);
// SGP at iteration t: rank + 2^(t mod hops).
int64_t exponential_peer(int64_t rank, int64_t n, int64_t t);
// AD-PSGD: odd ranks are active; neighbours at odd offsets +-1, +-(1 + 2^k) of the other parity.
bool is_active(int64_t rank);
std::vector<int64_t> bipartite_neighbors(int64_t rank, int64_t n);
// An active rank's peer at its t-th exchange: it cycles through its neighbours.
int64_t bipartite_peer(int64_t rank, int64_t n, int64_t t);
// GoSGD and gossip: uniform over the n - 1 others, from splitmix64 of (seed, rank, t).
int64_t random_peer(uint64_t seed, int64_t rank, int64_t n, int64_t t);

}  // namespace distsgd::sim
