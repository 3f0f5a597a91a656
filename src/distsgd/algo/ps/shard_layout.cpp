#include "distsgd/algo/ps/shard_layout.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/optim/flat_parameters.hpp"

namespace distsgd::algo::ps {

std::vector<ShardRange> shard_layout(const std::vector<optim::ParameterSlot>& slots, int64_t servers, Sharding policy) {
  int64_t total = 0;
  for (const auto& s : slots) total += s.numel;
  std::vector<ShardRange> shards;
  if (policy == Sharding::kMemory) {
    for (int64_t k = 0; k < servers; ++k) {
      const int64_t begin = total * k / servers, end = total * (k + 1) / servers;
      shards.push_back({begin, end - begin});
    }
    return shards;
  }
  require(static_cast<int64_t>(slots.size()) >= servers,
          "--sharding layer: the model has " + std::to_string(slots.size()) + " tensors, fewer than --servers " +
              std::to_string(servers) + " (use --sharding memory)");
  size_t next = 0;
  int64_t offset = 0;
  for (int64_t k = 0; k < servers; ++k) {
    const int64_t boundary = total * (k + 1) / servers;
    const size_t tensors_left_for_others = static_cast<size_t>(servers - k - 1);
    ShardRange shard{offset, 0};
    // At least one tensor per shard; stop at the boundary, keeping one tensor for every later shard.
    do {
      shard.numel += slots[next].numel;
      offset += slots[next].numel;
      ++next;
    } while (next < slots.size() - tensors_left_for_others &&
             (k == servers - 1 || offset + slots[next].numel / 2 <= boundary));
    shards.push_back(shard);
  }
  return shards;
}

}  // namespace distsgd::algo::ps
