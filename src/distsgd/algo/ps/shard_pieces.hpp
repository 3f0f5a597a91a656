// Wait-free backprop for the parameter-server algorithms (spec: "Optimization techniques" 2; Ko et al., IPDPS 2021):
// the gradient buckets of AR-SGD (algo/allreduce/gradient_buckets.hpp: backward order, a small first bucket, small
// tensors merged) cut at shard boundaries. A piece is the part of one bucket that one shard holds; every piece of a
// bucket is pushed as soon as the bucket's gradients are ready, so each shard receives its slice in several messages
// during backward instead of one after it.
//
// With --sharding layer a shard's tensors are scattered through the model (greedy balance by bytes), so a shard's
// last tensor is ready only near the end of backward: pushing whole shards would start every push at the end.
// Cutting buckets at shard boundaries keeps the first push as early as AR-SGD's first bucket. A piece's tensors are
// consecutive in its shard's local order (a bucket is a contiguous range of the flat vector and a shard's segments
// are in flat order), so it is one message into one contiguous range of the shard's buffer.
#pragma once
#include "distsgd/algo/allreduce/gradient_buckets.hpp"
#include "distsgd/algo/ps/shard_layout.hpp"

#include <cstdint>
#include <vector>

namespace distsgd::algo::ps {

struct Piece {
  size_t shard = 0;
  int64_t local_offset = 0;  // into the shard's buffer
  int64_t numel = 0;
  std::vector<Segment> segments;  // its elements in the flat vector, in flat order (local: into the piece)
};

// The pieces of each bucket, in bucket order; within a bucket, in shard order. Every element of every shard is in
// exactly one piece.
std::vector<std::vector<Piece>> cut_at_shards(const std::vector<Bucket>& buckets,
                                              const std::vector<ShardRange>& shards);

// One bucket over the whole flat vector: one piece per shard, the whole shard (pushes after backward).
std::vector<Piece> whole_shards(const std::vector<ShardRange>& shards);

}  // namespace distsgd::algo::ps
