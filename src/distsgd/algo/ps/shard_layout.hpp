// How the flat parameter vector is split across S parameter-server shards (spec: "Shared parameter-server
// substrate"). Each shard is one contiguous range, so a shard's slice moves in one message.
//   memory: S contiguous ranges of (nearly) equal size; a large tensor may be split.
//   layer:  whole tensors only, cut greedily in registration order where the running byte count passes each
//           k/S boundary (a tensor never splits; contiguity keeps messages zero-copy, at some cost in balance).
#pragma once
#include "distsgd/algo/ps/ps_options.hpp"

#include <cstdint>
#include <vector>

namespace distsgd::optim {
struct ParameterSlot;
}

namespace distsgd::algo::ps {

struct ShardRange {
  int64_t offset = 0;
  int64_t numel = 0;
};

std::vector<ShardRange> shard_layout(const std::vector<optim::ParameterSlot>& slots, int64_t servers, Sharding policy);

}  // namespace distsgd::algo::ps
