// Topology of the decentralized algorithms: who talks to whom at iteration t. Pure functions of (rank, n, t[, seed]),
// so every worker computes the same graph without communicating, and each piece is testable alone (spec:
// SGP/BlueFog's three pieces). In core so that the decentralized algorithms (algo/decentralized) and their
// discrete-event simulation (sim/) pick the very same peers.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace distsgd::topology {

enum class Topology {
  kRing,                  // i -> i+1
  kExponential,           // i -> i + 2^k, k = t mod hops: directed, time-varying (SGP)
  kBipartiteExponential,  // active odd ranks <-> passive even ranks at offsets +-1, +-(1+2^k) (AD-PSGD)
  kRandom,                // i -> a uniformly random j != i, from a seeded hash of (seed, i, t)
};

// Number of distinct hop lengths 2^k < n of the exponential graph (0 when n == 1).
int64_t exponential_hops(int64_t n);

// AD-PSGD: odd ranks are active (they initiate exchanges), even ranks passive (they only answer).
bool is_active(int64_t rank);
// The neighbours of `rank` in the bipartite exponential graph, sorted, without duplicates or self; every
// neighbour has the other parity (so an active rank only ever talks to passive ones).
std::vector<int64_t> bipartite_neighbors(int64_t rank, int64_t n);

// splitmix64 of (seed, rank, t): the same on every process, independent of thread timing.
uint64_t mix_hash(uint64_t seed, uint64_t rank, uint64_t t);
int64_t random_peer(uint64_t seed, int64_t rank, int64_t n, int64_t t);

// The peer `rank` sends to (or, for bipartite, exchanges with: active ranks cycle through their neighbours)
// at iteration t. n must be >= 2. For a passive rank of the bipartite graph there is no initiated peer: -1.
int64_t peer_at(Topology topology, int64_t rank, int64_t n, int64_t t, uint64_t seed = 0);

// peer_at when that peer is not lost; otherwise the run goes on without it (--on-worker-loss continue): random, a
// uniform draw among the live others (from a second hash, so every live one is equally likely); exponential and
// bipartite, the next live peer of the cycle (the following hops or neighbours); ring, the next live rank. -1
// when no live peer is left. With nobody lost, the very same peer as peer_at.
int64_t live_peer_at(Topology topology, int64_t rank, int64_t n, int64_t t, uint64_t seed,
                     const std::function<bool(int64_t)>& is_lost);

// Every rank `rank` may send to at some iteration, and every rank that may send to `rank`.
std::vector<int64_t> out_neighbors(Topology topology, int64_t rank, int64_t n);
std::vector<int64_t> in_neighbors(Topology topology, int64_t rank, int64_t n);

}  // namespace distsgd::topology
