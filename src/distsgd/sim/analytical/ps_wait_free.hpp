// BSP's wait-free pushes (--overlap wfbp) in the analytical fidelity. Backward hands out the gradient buckets
// (AR-SGD's, last layers first), each cut at the shards into pieces (algo/ps/shard_pieces.cpp). Every piece is a round:
// the pushers' copies go up, the shard aggregates and updates, the new values come back. A shard's handler of a worker
// takes its next piece only once the last one's reply has reached the worker (algo/ps/shard_server.cpp), so a shard's
// pieces go stop-and-wait while different shards' pieces overlap. Each leg of a round occupies links (numbered
// resources: ports, a node's link each way), each link carrying one leg at a time at its full rate, legs in the order
// the pieces start; the round's processing occupies its shard's processor. With local aggregation each bucket first
// goes to the node's leader over the intra-node link and is summed there. A handful of pieces per bucket: microseconds
// a prediction, and the discrete-event simulator's figure wherever one link or one shard sets the pace.
#pragma once
#include <cstddef>
#include <functional>
#include <vector>

#include "distsgd/sim/analytical/shard_layout.hpp"
#include "distsgd/sim/platform/model_profile.hpp"

namespace distsgd::sim {

// A link a leg occupies, and for how long.
struct LinkUse {
  std::size_t link = 0;
  double seconds = 0;
};

struct WaitFreeRoundCosts {
  double alpha = 0;  // latency of each message (push, reply)
  // The links that every pusher's copy of `bytes` to shard s occupies, and the links its reply occupies.
  std::function<void(std::size_t s, double bytes, std::vector<LinkUse>& push, std::vector<LinkUse>& reply)> legs;
  std::function<double(double)> processing;  // a shard's aggregation, update and message processing of a round
  // Local aggregation (hand_over_members 0: none): the node's other workers send their bucket to the leader over the
  // intra-node link, which sums them.
  double hand_over_members = 0;
  double intra_alpha = 0, intra_seconds_per_byte = 0, gamma_seconds_per_byte = 0;
};

// From the start of backward until the last reply has reached the worker (at least the backward pass).
double wait_free_bsp_seconds(const ModelProfile& profile, const ShardRanges& shards, double first_bucket_bytes,
                             double bucket_bytes, const WaitFreeRoundCosts& costs);

}  // namespace distsgd::sim
