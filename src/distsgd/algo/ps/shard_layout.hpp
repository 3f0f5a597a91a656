// How the flat parameter vector is split across S parameter-server shards (spec: "Shared parameter-server
// substrate"). A shard is a list of segments of the flat vector in flat order; its own buffer (the server's slice
// of x~, every message to or from it) holds them back to back, its "local" order.
//   memory: S contiguous ranges of (nearly) equal size, one segment each; a large tensor may be split.
//   layer:  whole tensors, balanced greedily by bytes: largest tensor first, each to the shard holding the fewest
//           bytes so far (Graham's LPT rule: no shard exceeds the mean by more than the largest tensor). A shard's
//           tensors are scattered through the model, so its messages are packed (one copy each way), and the
//           wait-free-backprop pushes cut each gradient bucket at shard boundaries (ps/shard_pieces.hpp).
#pragma once
#include "distsgd/algo/ps/ps_options.hpp"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace distsgd::optim {
struct ParameterSlot;
}

namespace distsgd::algo::ps {

struct Segment {
  int64_t offset = 0;  // into the flat vector
  int64_t numel = 0;
  int64_t local = 0;  // where it starts in its shard's buffer
};

struct ShardRange {
  std::vector<Segment> segments;  // in flat order, adjacent ones merged
  int64_t numel = 0;
  bool contiguous() const { return segments.size() == 1; }
};

std::vector<ShardRange> shard_layout(const std::vector<optim::ParameterSlot>& slots, int64_t servers, Sharding policy);

// The shard's elements of `flat` back to back: a view when the shard is one segment, otherwise a copy.
at::Tensor gather_shard(const at::Tensor& flat, const ShardRange& shard);
// Copies the shard's elements of `flat` into `local` (shard-sized).
void gather_shard_into(const at::Tensor& flat, const ShardRange& shard, at::Tensor local);
// Copies `local` (the shard's elements back to back) to their places in `flat`.
void scatter_shard(const at::Tensor& local, const ShardRange& shard, at::Tensor& flat);

}  // namespace distsgd::algo::ps
