// Wait-free pushes to a parameter server (--overlap wfbp) in the analytical fidelity: BSP's, and one ASP worker's.
// Backward hands out the gradient buckets (AR-SGD's, last layers first), each cut at the shards into pieces
// (algo/ps/shard_pieces.cpp). Every piece is a round: the pushers' copies go up, the shard aggregates and updates, the
// new values come back. A shard's handler of a worker takes its next piece only once the last one's reply has reached
// the worker (algo/ps/shard_server.cpp), so a shard's pieces go stop-and-wait while different shards' pieces overlap.
// Each leg of a round is flows over links (numbered: ports, a node's link each way) that share every link max-min
// fairly with the other rounds' flows in flight, as the discrete-event simulator's flows do; the round's processing
// occupies its shard's processor. With local aggregation each bucket first goes to the node's leader over the
// intra-node link and is summed there. A handful of pieces per bucket, a flow group per node and leg: well under a
// millisecond a prediction, and the discrete-event simulator's figure within a few percent where the workers move in
// step.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "distsgd/sim/analytical/shard_layout.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "distsgd/sim/platform/model_profile.hpp"

namespace distsgd::sim {

// The flows of a round's leg that take one path: each carries the piece's bytes; `flows` of them cross each listed
// link (at most 4, as a DES path). One group stands for every worker alike (the workers move in step), so it may put
// one flow on "a worker's link" and all the pushers' flows on a shard's.
struct FlowGroup {
  struct Crossing {
    std::size_t link = 0;
    double flows = 1;
  };
  std::array<Crossing, 4> crossings{};
  int count = 0;
  FlowGroup& cross(std::size_t link, double flows) {
    crossings.at(static_cast<std::size_t>(count++)) = {link, flows};
    return *this;
  }
  const Crossing* begin() const { return crossings.data(); }
  const Crossing* end() const { return crossings.data() + count; }
};

struct WaitFreeRoundCosts {
  double alpha = 0;                      // latency of each message (push, reply)
  std::vector<double> bytes_per_second;  // each link's rate
  // The flows that carry every pusher's copy of a piece to shard s, and those that carry the replies.
  std::function<void(std::size_t s, std::vector<FlowGroup>& push, std::vector<FlowGroup>& reply)> legs;
  std::function<double(double)> processing;  // a shard's aggregation, update and message processing of a round
  // Local aggregation (hand_over_members 0: none): the node's other workers send their bucket to the leader over the
  // intra-node link, which sums them.
  double hand_over_members = 0;
  double intra_alpha = 0, intra_seconds_per_byte = 0, gamma_seconds_per_byte = 0;
  // false: unanswered pushes (SSP's): a round ends once its shard has processed the piece, which frees the shard's
  // handler of the worker (DesContext::handled); its reply legs are not used.
  bool replies = true;
};

// Servers behind links of their own: links 0 and 1 are a (representative) worker's link up and down at
// `worker_bytes_per_second`, 2 + 2s and 3 + 2s shard s's link in and out; a piece's push is one flow on the worker's
// link and `pushes_at_once` flows on the shard's, its reply one flow on the worker's link and `pushers` on the shard's.
void route_over_servers_own_links(WaitFreeRoundCosts& costs, int64_t servers, double worker_bytes_per_second,
                                  double server_bytes_per_second, double pushers, double pushes_at_once);

// Backward's seconds until it hands out the first bucket (the buckets of --overlap wfbp, bucket_layout.hpp).
double first_bucket_backward_seconds(const ModelProfile& profile, double first_bucket_bytes, double bucket_bytes);

// Servers on the workers' nodes (server s on node_of_server(s)): links 2n and 2n + 1 are node n's link out and in,
// 2N + 2s and 2N + 2s + 1 shard s's port into its node and out (the intra-node link). A piece's push is a group per
// node sending: `flows_from(n)` flows through node n's link out and the shard's node's link in, or through the port
// where the shard lives on node n; its reply the same way back. Nodes with no flows send nothing. `cluster` must
// outlive `costs`.
void route_over_colocated_servers(WaitFreeRoundCosts& costs, const ClusterDescription& cluster, int64_t workers,
                                  int64_t servers, std::function<double(int64_t node)> flows_from);

// From the start of backward until the last reply has reached the worker, or without replies the last piece has been
// processed (at least the backward pass).
double wait_free_rounds_seconds(const ModelProfile& profile, const ShardRanges& shards, double first_bucket_bytes,
                                double bucket_bytes, const WaitFreeRoundCosts& costs);

}  // namespace distsgd::sim
