#include "distsgd/core/peer_topology.hpp"

#include "distsgd/core/error.hpp"

#include <algorithm>

namespace distsgd::topology {
namespace {

int64_t modulo(int64_t a, int64_t n) { return ((a % n) + n) % n; }

std::vector<int64_t> sorted_unique(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

int64_t exponential_hops(int64_t n) {
  int64_t hops = 0;
  for (int64_t hop = 1; hop < n; hop *= 2) ++hops;
  return hops;
}

bool is_active(int64_t rank) { return rank % 2 == 1; }

std::vector<int64_t> bipartite_neighbors(int64_t rank, int64_t n) {
  std::vector<int64_t> offsets{1};
  for (int64_t power = 2; 1 + power < n; power *= 2) offsets.push_back(1 + power);
  std::vector<int64_t> peers;
  for (int64_t offset : offsets) {
    for (int64_t sign : {1, -1}) {
      const int64_t peer = modulo(rank + sign * offset, n);
      // With odd n the wrap-around can join two ranks of the same parity: such an edge is dropped.
      if (peer != rank && is_active(peer) != is_active(rank)) peers.push_back(peer);
    }
  }
  return sorted_unique(peers);
}

uint64_t mix_hash(uint64_t seed, uint64_t rank, uint64_t t) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL + rank * 0xBF58476D1CE4E5B9ULL + t * 0x94D049BB133111EBULL + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

int64_t random_peer(uint64_t seed, int64_t rank, int64_t n, int64_t t) {
  require(n >= 2, "a random peer needs at least 2 workers");
  // Uniform over the n-1 others: draw in [0, n-1) and skip self.
  const auto draw = static_cast<int64_t>(mix_hash(seed, static_cast<uint64_t>(rank), static_cast<uint64_t>(t)) %
                                         static_cast<uint64_t>(n - 1));
  return draw < rank ? draw : draw + 1;
}

int64_t peer_at(Topology topology, int64_t rank, int64_t n, int64_t t, uint64_t seed) {
  require(n >= 2, "a decentralized topology needs at least 2 workers");
  switch (topology) {
    case Topology::kRing:
      return modulo(rank + 1, n);
    case Topology::kExponential:
      return modulo(rank + (int64_t{1} << (t % exponential_hops(n))), n);
    case Topology::kBipartiteExponential: {
      if (!is_active(rank)) return -1;
      const auto peers = bipartite_neighbors(rank, n);
      return peers.empty() ? -1 : peers[static_cast<size_t>(t % static_cast<int64_t>(peers.size()))];
    }
    case Topology::kRandom:
      return random_peer(seed, rank, n, t);
  }
  return -1;
}

int64_t live_peer_at(Topology topology, int64_t rank, int64_t n, int64_t t, uint64_t seed,
                     const std::function<bool(int64_t)>& is_lost) {
  const int64_t peer = peer_at(topology, rank, n, t, seed);
  if (peer < 0 || !is_lost || !is_lost(peer)) return peer;
  std::vector<int64_t> cycle;  // the candidates in the order they are tried
  switch (topology) {
    case Topology::kRing:
      for (int64_t k = 1; k < n; ++k) cycle.push_back(modulo(rank + k, n));
      break;
    case Topology::kExponential: {
      const int64_t hops = exponential_hops(n);
      for (int64_t k = 1; k < hops; ++k) cycle.push_back(peer_at(topology, rank, n, t + k));
      break;
    }
    case Topology::kBipartiteExponential: {
      const auto peers = bipartite_neighbors(rank, n);
      const auto size = static_cast<int64_t>(peers.size());
      for (int64_t k = 1; k < size; ++k) cycle.push_back(peers[static_cast<size_t>((t + k) % size)]);
      break;
    }
    case Topology::kRandom: {
      std::vector<int64_t> live;
      for (int64_t j = 0; j < n; ++j) {
        if (j != rank && !is_lost(j)) live.push_back(j);
      }
      if (live.empty()) return -1;
      // A live draw keeps its peer and a lost one is redrawn among the live: each live one has 1/|live|.
      const uint64_t draw = mix_hash(seed + 1, static_cast<uint64_t>(rank), static_cast<uint64_t>(t));
      return live[static_cast<size_t>(draw % live.size())];
    }
  }
  for (int64_t candidate : cycle) {
    if (candidate != rank && !is_lost(candidate)) return candidate;
  }
  return -1;
}

std::vector<int64_t> out_neighbors(Topology topology, int64_t rank, int64_t n) {
  std::vector<int64_t> peers;
  switch (topology) {
    case Topology::kRing:
      peers.push_back(modulo(rank + 1, n));
      break;
    case Topology::kExponential:
      for (int64_t k = 0; k < exponential_hops(n); ++k) peers.push_back(peer_at(topology, rank, n, k));
      break;
    case Topology::kBipartiteExponential:
      if (is_active(rank)) peers = bipartite_neighbors(rank, n);
      break;
    case Topology::kRandom:
      for (int64_t j = 0; j < n; ++j) {
        if (j != rank) peers.push_back(j);
      }
      break;
  }
  return sorted_unique(peers);
}

std::vector<int64_t> in_neighbors(Topology topology, int64_t rank, int64_t n) {
  std::vector<int64_t> senders;
  for (int64_t j = 0; j < n; ++j) {
    const auto out = out_neighbors(topology, j, n);
    if (std::find(out.begin(), out.end(), rank) != out.end()) senders.push_back(j);
  }
  return senders;
}

}  // namespace distsgd::topology
