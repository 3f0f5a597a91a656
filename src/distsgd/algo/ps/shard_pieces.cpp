#include "distsgd/algo/ps/shard_pieces.hpp"

#include "distsgd/core/error.hpp"

#include <algorithm>

namespace distsgd::algo::ps {
namespace {

// The part of [begin, end) of the flat vector that shard holds, as one piece (numel 0: none).
Piece intersect(size_t shard_index, const ShardRange& shard, int64_t begin, int64_t end) {
  Piece piece;
  piece.shard = shard_index;
  for (const auto& s : shard.segments) {
    const int64_t from = std::max(begin, s.offset), to = std::min(end, s.offset + s.numel);
    if (from >= to) continue;
    const int64_t local = s.local + (from - s.offset);
    if (piece.numel == 0) piece.local_offset = local;
    require(local == piece.local_offset + piece.numel, "a gradient bucket is not contiguous in its shard");
    piece.segments.push_back({from, to - from, piece.numel});
    piece.numel += to - from;
  }
  return piece;
}

}  // namespace

std::vector<std::vector<Piece>> cut_at_shards(const std::vector<Bucket>& buckets,
                                              const std::vector<ShardRange>& shards) {
  std::vector<std::vector<Piece>> pieces;
  for (const auto& bucket : buckets) {
    std::vector<Piece> of_bucket;
    for (size_t s = 0; s < shards.size(); ++s) {
      auto piece = intersect(s, shards[s], bucket.offset, bucket.offset + bucket.numel);
      if (piece.numel > 0) of_bucket.push_back(std::move(piece));
    }
    pieces.push_back(std::move(of_bucket));
  }
  return pieces;
}

std::vector<Piece> whole_shards(const std::vector<ShardRange>& shards) {
  std::vector<Piece> pieces;
  for (size_t s = 0; s < shards.size(); ++s) {
    Piece piece;
    piece.shard = s;
    piece.numel = shards[s].numel;
    piece.segments = shards[s].segments;
    pieces.push_back(std::move(piece));
  }
  return pieces;
}

}  // namespace distsgd::algo::ps
