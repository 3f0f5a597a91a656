#include "distsgd/sim/des_topology.hpp"

#include <algorithm>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {
namespace {

int64_t modulo(int64_t a, int64_t n) { return ((a % n) + n) % n; }

uint64_t mix_hash(uint64_t seed, uint64_t rank, uint64_t t) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL + rank * 0xBF58476D1CE4E5B9ULL + t * 0x94D049BB133111EBULL + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

int64_t exponential_hops(int64_t n) {
  int64_t hops = 0;
  for (int64_t hop = 1; hop < n; hop *= 2) ++hops;
  return hops;
}

int64_t exponential_peer(int64_t rank, int64_t n, int64_t t) {
  require(n >= 2, "a decentralized topology needs at least 2 workers");
  return modulo(rank + (int64_t{1} << (t % exponential_hops(n))), n);
}

bool is_active(int64_t rank) { return rank % 2 == 1; }

std::vector<int64_t> bipartite_neighbors(int64_t rank, int64_t n) {
  std::vector<int64_t> offsets{1};
  for (int64_t power = 2; 1 + power < n; power *= 2) offsets.push_back(1 + power);
  std::vector<int64_t> peers;
  for (int64_t offset : offsets) {
    for (int64_t sign : {1, -1}) {
      const int64_t peer = modulo(rank + sign * offset, n);
      if (peer != rank && is_active(peer) != is_active(rank)) peers.push_back(peer);
    }
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

int64_t bipartite_peer(int64_t rank, int64_t n, int64_t t) {
  if (!is_active(rank)) return -1;
  const auto peers = bipartite_neighbors(rank, n);
  return peers.empty() ? -1 : peers[static_cast<size_t>(t % static_cast<int64_t>(peers.size()))];
}

int64_t random_peer(uint64_t seed, int64_t rank, int64_t n, int64_t t) {
  require(n >= 2, "a random peer needs at least 2 workers");
  const auto draw = static_cast<int64_t>(mix_hash(seed, static_cast<uint64_t>(rank), static_cast<uint64_t>(t)) %
                                         static_cast<uint64_t>(n - 1));
  return draw < rank ? draw : draw + 1;
}

}  // namespace distsgd::sim
