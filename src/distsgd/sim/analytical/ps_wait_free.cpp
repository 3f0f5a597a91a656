#include "distsgd/sim/analytical/ps_wait_free.hpp"

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "distsgd/core/error.hpp"
#include "distsgd/sim/analytical/bucket_layout.hpp"

namespace distsgd::sim {
namespace {

struct Bucket {
  int64_t begin = 0, end = 0;  // elements of the flat vector
  double backward = 0;         // seconds of backward that produce it
};

// The buckets (bucket_layout.hpp) as ranges of the flat vector, in the order backward hands them out.
std::vector<Bucket> backward_buckets(const ModelProfile& profile, double first_bytes, double bucket_bytes) {
  std::vector<int64_t> offset{0};
  for (const auto& t : profile.tensors) offset.push_back(offset.back() + t.parameters);
  const BucketLayout layout = make_bucket_layout(profile, first_bytes, bucket_bytes);
  std::vector<Bucket> buckets;
  for (std::size_t b = 0; b < layout.size(); ++b) {
    Bucket bucket{offset[layout.first[b]], offset[layout.last[b] + 1], 0};
    for (std::size_t t = layout.first[b]; t <= layout.last[b]; ++t)
      bucket.backward += profile.tensors[t].backward_seconds;
    buckets.push_back(bucket);
  }
  return buckets;
}

// Elements of [begin, end) that shard s holds.
int64_t overlap(const ShardRanges& shards, std::size_t s, int64_t begin, int64_t end) {
  int64_t n = 0;
  for (const auto& [offset, count] : shards.segments[s]) {
    n += std::max<int64_t>(0, std::min(end, offset + count) - std::max(begin, offset));
  }
  return n;
}

}  // namespace

double wait_free_bsp_seconds(const ModelProfile& profile, const ShardRanges& shards, double first_bucket_bytes,
                             double bucket_bytes, const WaitFreeRoundCosts& c) {
  require(!profile.tensors.empty() && !shards.numel.empty(), "wait_free_bsp_seconds: no tensors or no shards");
  const std::size_t servers = shards.numel.size();
  const double per_element = static_cast<double>(profile.bytes_per_parameter);
  // Each shard's pieces in hand-out order: when the worker has it (summed, with local aggregation), and its bytes.
  struct Piece {
    double ready, bytes;
  };
  std::vector<std::vector<Piece>> queue(servers);
  double backward = 0, hand_over = 0, sum = 0;
  for (const auto& bucket : backward_buckets(profile, first_bucket_bytes, bucket_bytes)) {
    backward += bucket.backward;
    double ready = backward;
    if (c.hand_over_members > 0) {
      const double bytes = static_cast<double>(bucket.end - bucket.begin) * per_element;
      hand_over = std::max(ready, hand_over) + c.intra_alpha + c.hand_over_members * bytes * c.intra_seconds_per_byte;
      sum = std::max(hand_over, sum) + c.hand_over_members * bytes * c.gamma_seconds_per_byte;
      ready = sum;
    }
    for (std::size_t s = 0; s < servers; ++s) {
      const double bytes = static_cast<double>(overlap(shards, s, bucket.begin, bucket.end)) * per_element;
      if (bytes > 0) queue[s].push_back({ready, bytes});
    }
  }
  // The rounds in the order they start: each shard's next piece once it is ready and the last one's reply is back.
  std::vector<std::size_t> next(servers, 0);
  std::vector<double> handler(servers, 0), processor(servers, 0);
  // Each link's bookings (start, end), in time order: a leg takes the first gap long enough, so a reply booked ahead
  // does not hold back a push that fits before it (the links share their rate; booking whole legs keeps each one's
  // work and lets the gaps be used).
  std::vector<std::vector<std::pair<double, double>>> booked;
  const auto book = [&](std::size_t link, double start, double seconds) {
    if (link >= booked.size()) booked.resize(link + 1);
    auto& bookings = booked[link];
    auto at = bookings.begin();
    for (; at != bookings.end(); ++at) {
      if (start + seconds <= at->first) break;  // fits in the gap before this booking
      start = std::max(start, at->second);
    }
    bookings.insert(at, {start, start + seconds});
    return start + seconds;
  };
  std::vector<LinkUse> push, reply;
  const auto occupy = [&](const std::vector<LinkUse>& legs, double start) {
    double end = start;
    for (const auto& use : legs) end = std::max(end, book(use.link, start, use.seconds));
    return end + c.alpha;
  };
  double last_reply = 0;
  for (;;) {
    std::size_t first = servers;
    double start = 0;
    for (std::size_t s = 0; s < servers; ++s) {
      if (next[s] == queue[s].size()) continue;
      const double t = std::max(queue[s][next[s]].ready, handler[s]);
      if (first == servers || t < start) first = s, start = t;
    }
    if (first == servers) break;
    const Piece& piece = queue[first][next[first]++];
    push.clear();
    reply.clear();
    c.legs(first, piece.bytes, push, reply);
    processor[first] = std::max(occupy(push, start), processor[first]) + c.processing(piece.bytes);
    handler[first] = occupy(reply, processor[first]);
    last_reply = std::max(last_reply, handler[first]);
  }
  return std::max(backward, last_reply);
}

}  // namespace distsgd::sim
