// The model cut into a parameter server's S shards, as algo/ps/shard_layout.cpp cuts it: memory = S equal
// contiguous ranges of the flat vector; layer = whole tensors, largest first, each to the lightest shard. The
// discrete-event simulator pushes to these ranges; the analytical models need only the largest, which sets how long
// the busiest server's link and processing take.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "distsgd/sim/platform/model_profile.hpp"

namespace distsgd::sim {

// Each shard's ranges of the flat vector (element offset, count), in flat order.
struct ShardRanges {
  std::vector<std::vector<std::pair<int64_t, int64_t>>> segments;
  std::vector<int64_t> numel;
};
// Throws Error for an unknown sharding, or layer sharding with fewer tensors than servers.
ShardRanges shard_ranges(const ModelProfile& profile, int64_t servers, const std::string& sharding);

// The bytes of the largest shard (m / S under memory sharding, whose shards differ by one element at most).
double largest_shard_bytes(const ModelProfile& profile, int64_t servers, const std::string& sharding);

}  // namespace distsgd::sim
