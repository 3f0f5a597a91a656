#include "distsgd/sim/analytical/ps_wait_free.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
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

// Max-min fair rates (progressive filling) of the flow groups in flight: every unfixed group's flows gain alike
// until a link is full; the groups crossing it are fixed there, the rest go on with what is left.
struct LinkShares {
  std::vector<double> rate;  // of each group's flows
  std::vector<char> fixed;
  std::vector<double> left, demand;  // scratch, per link
};
void share_links(const std::vector<FlowGroup>& groups, const std::vector<double>& capacity, LinkShares& out) {
  constexpr double kUnlimited = std::numeric_limits<double>::infinity();
  auto& rate = out.rate;
  auto& fixed = out.fixed;
  auto& left = out.left;
  auto& demand = out.demand;
  rate.assign(groups.size(), 0);
  fixed.assign(groups.size(), 0);
  left = capacity;
  demand.resize(capacity.size());
  std::size_t unfixed = groups.size();
  // A group only through links without a limit (an intra-node link of infinite rate) moves at once.
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto& group = groups[g];
    if (std::all_of(group.begin(), group.end(), [&](const auto& x) { return capacity[x.link] == kUnlimited; })) {
      rate[g] = kUnlimited;
      fixed[g] = 1;
      --unfixed;
    }
  }
  while (unfixed > 0) {
    std::fill(demand.begin(), demand.end(), 0.0);
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (fixed[g]) continue;
      for (const auto& x : groups[g]) demand[x.link] += x.flows;
    }
    double step = kUnlimited;
    for (std::size_t l = 0; l < left.size(); ++l) {
      if (demand[l] > 0 && capacity[l] < kUnlimited) step = std::min(step, std::max(0.0, left[l]) / demand[l]);
    }
    for (std::size_t l = 0; l < left.size(); ++l) {
      if (capacity[l] < kUnlimited) left[l] -= step * demand[l];
    }
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (fixed[g]) continue;
      rate[g] += step;
      for (const auto& x : groups[g]) {
        if (capacity[x.link] < kUnlimited && left[x.link] <= 1e-9 * capacity[x.link]) fixed[g] = 1;
      }
      if (fixed[g]) --unfixed;
    }
  }
}

// A shard's pieces in hand-out order: when the worker has it (summed, with local aggregation), and its bytes.
struct Piece {
  double ready, bytes;
};

// The rounds, their legs as flows sharing the links max-min fairly (as the discrete-event simulator's flows do).
// Booking whole legs one after another on a link, the first cut, let one round's leg run at the link's full rate
// while the others waited: 0.77-1.40 of the DES where several shards' pieces crossed the same links. A round: its push
// flows start together; once the last has arrived (and alpha), the shard processes; then its reply flows; once the last
// is back (and alpha), the shard's next piece may start; without replies, once the processing ends. Returns when the
// last round ended.
double run_rounds(const std::vector<std::vector<Piece>>& queue, const WaitFreeRoundCosts& c) {
  constexpr double kNever = std::numeric_limits<double>::infinity();
  enum class Phase { kWaiting, kPushing, kProcessing, kReplying, kDone };
  struct Shard {
    Phase phase = Phase::kWaiting;
    std::size_t next = 0;  // the piece in its round, or next to start
    double timer = 0;      // when a waiting round starts, or processing ends
    int groups = 0;        // flow groups of its leg still in flight
  };
  const std::size_t servers = queue.size();
  std::vector<Shard> shard(servers);
  std::vector<FlowGroup> flying, push, reply;
  std::vector<std::size_t> owner;  // each flying group's shard
  std::vector<double> left;        // each flying group's bytes still to move (per flow)
  LinkShares shares;
  const auto launch = [&](std::size_t s, const std::vector<FlowGroup>& leg, double bytes) {
    shard[s].groups = 0;
    for (const auto& group : leg) {
      if (bytes <= 0 || group.count == 0) continue;
      for (const auto& x : group) {
        require(x.link < c.bytes_per_second.size() && c.bytes_per_second[x.link] > 0,
                "wait_free_rounds_seconds: a flow crosses a link without a rate");
      }
      flying.push_back(group);
      owner.push_back(s);
      left.push_back(bytes);
      ++shard[s].groups;
    }
  };
  const auto wait_for_next = [&](std::size_t s, double now) {
    Shard& sh = shard[s];
    sh.phase = sh.next == queue[s].size() ? Phase::kDone : Phase::kWaiting;
    if (sh.phase == Phase::kWaiting) sh.timer = std::max(now, queue[s][sh.next].ready);
  };
  double now = 0, last_reply = 0;
  for (std::size_t s = 0; s < servers; ++s) wait_for_next(s, 0);
  for (;;) {
    // Move on every shard whose next step is due (a leg without bytes ends at once, so repeat until none moves).
    for (bool moved = true; moved;) {
      moved = false;
      for (std::size_t s = 0; s < servers; ++s) {
        Shard& sh = shard[s];
        const double bytes = sh.next < queue[s].size() ? queue[s][sh.next].bytes : 0;
        const bool due = (sh.phase == Phase::kWaiting || sh.phase == Phase::kProcessing) && sh.timer <= now;
        const bool landed = (sh.phase == Phase::kPushing || sh.phase == Phase::kReplying) && sh.groups == 0;
        if (!due && !landed) continue;
        moved = true;
        if (sh.phase == Phase::kWaiting || (sh.phase == Phase::kProcessing && c.replies)) {
          push.clear();
          reply.clear();
          c.legs(s, push, reply);
          const bool pushing = sh.phase == Phase::kWaiting;
          launch(s, pushing ? push : reply, bytes);
          sh.phase = pushing ? Phase::kPushing : Phase::kReplying;
        } else if (sh.phase == Phase::kPushing) {
          sh.timer = now + c.alpha + c.processing(bytes);
          sh.phase = Phase::kProcessing;
        } else if (!c.replies && sh.phase == Phase::kProcessing) {
          last_reply = std::max(last_reply, now);
          ++sh.next;
          wait_for_next(s, now);
        } else {
          last_reply = std::max(last_reply, now + c.alpha);
          ++sh.next;
          wait_for_next(s, now + c.alpha);
        }
      }
    }
    share_links(flying, c.bytes_per_second, shares);
    const auto& rate = shares.rate;
    double next = kNever;
    for (const auto& sh : shard) {
      if (sh.phase == Phase::kWaiting || sh.phase == Phase::kProcessing) next = std::min(next, sh.timer);
    }
    for (std::size_t g = 0; g < flying.size(); ++g) next = std::min(next, now + left[g] / rate[g]);
    if (next == kNever) break;
    // Every group moves its rate for the interval; those that arrive by `next` (within the rounding) land.
    const double dt = next - now;
    std::size_t kept = 0;
    for (std::size_t g = 0; g < flying.size(); ++g) {
      if (now + left[g] / rate[g] <= next * (1 + 1e-12)) {
        --shard[owner[g]].groups;
        continue;
      }
      flying[kept] = flying[g];
      owner[kept] = owner[g];
      left[kept] = left[g] - rate[g] * dt;
      ++kept;
    }
    flying.resize(kept);
    owner.resize(kept);
    left.resize(kept);
    now = next;
  }
  return last_reply;
}

}  // namespace

void route_over_servers_own_links(WaitFreeRoundCosts& costs, int64_t servers, double worker_bytes_per_second,
                                  double server_bytes_per_second, double pushers, double pushes_at_once) {
  costs.bytes_per_second = {worker_bytes_per_second, worker_bytes_per_second};
  costs.bytes_per_second.resize(2 + 2 * static_cast<std::size_t>(servers), server_bytes_per_second);
  costs.legs = [pushers, pushes_at_once](std::size_t shard, std::vector<FlowGroup>& push,
                                         std::vector<FlowGroup>& reply) {
    push.push_back(FlowGroup{}.cross(0, 1).cross(2 + 2 * shard, pushes_at_once));
    reply.push_back(FlowGroup{}.cross(1, 1).cross(3 + 2 * shard, pushers));
  };
}

void route_over_colocated_servers(WaitFreeRoundCosts& costs, const ClusterDescription& cluster, int64_t workers,
                                  int64_t servers, std::function<double(int64_t node)> flows_from) {
  const int64_t nodes = cluster.nodes(workers);
  costs.bytes_per_second.assign(2 * static_cast<std::size_t>(nodes), cluster.worker_bytes_per_second);
  costs.bytes_per_second.resize(2 * static_cast<std::size_t>(nodes + servers), cluster.intra_node_rate());
  costs.legs = [&cluster, workers, nodes, flows_from = std::move(flows_from)](
                   std::size_t shard, std::vector<FlowGroup>& push, std::vector<FlowGroup>& reply) {
    const int64_t home = cluster.node_of_server(static_cast<int64_t>(shard), workers);
    const auto link = [](int64_t node, bool in) { return static_cast<std::size_t>(2 * node + (in ? 1 : 0)); };
    const auto port = static_cast<std::size_t>(2 * nodes) + 2 * shard;
    for (int64_t n = 0; n < nodes; ++n) {
      const double flows = flows_from(n);
      if (flows <= 0) continue;
      if (n == home) {
        push.push_back(FlowGroup{}.cross(port, flows));
        reply.push_back(FlowGroup{}.cross(port + 1, flows));
      } else {
        push.push_back(FlowGroup{}.cross(link(n, false), flows).cross(link(home, true), flows));
        reply.push_back(FlowGroup{}.cross(link(home, false), flows).cross(link(n, true), flows));
      }
    }
  };
}

double first_bucket_backward_seconds(const ModelProfile& profile, double first_bucket_bytes, double bucket_bytes) {
  require(!profile.tensors.empty(), "first_bucket_backward_seconds: no tensors");
  return backward_buckets(profile, first_bucket_bytes, bucket_bytes).front().backward;
}

double wait_free_rounds_seconds(const ModelProfile& profile, const ShardRanges& shards, double first_bucket_bytes,
                                double bucket_bytes, const WaitFreeRoundCosts& c) {
  require(!profile.tensors.empty() && !shards.numel.empty(), "wait_free_rounds_seconds: no tensors or no shards");
  const std::size_t servers = shards.numel.size();
  const double per_element = static_cast<double>(profile.bytes_per_parameter);
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
  return std::max(backward, run_rounds(queue, c));
}

}  // namespace distsgd::sim
