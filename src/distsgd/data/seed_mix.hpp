// Derives independent seeds for separate random streams from one user seed.
#pragma once
#include <cstdint>

namespace distsgd::data {

// splitmix64 finalizer: nearby inputs give unrelated outputs, so (seed, stream) pairs never share a stream.
inline uint64_t mix_seed(uint64_t seed, uint64_t stream) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace distsgd::data
