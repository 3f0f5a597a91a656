// What a parameter-server algorithm's messages ask of the links when the servers run on the workers' nodes
// (ClusterDescription::server_placement, as TensorFlow's distributed runs and BytePS place them): a node's link
// carries its pushers' bytes to the other nodes' servers and its servers' bytes to the other nodes' workers, each
// direction shared; a worker reaches a server of its own node over the node's own links. The models with servers
// behind links of their own keep their closed forms (synchronous_model.cpp, asynchronous_model.cpp).
#pragma once
#include <cstdint>

#include "distsgd/sim/platform/cluster_description.hpp"

namespace distsgd::sim {

// One BSP round's transfer time (without alpha) on a cluster whose servers run on its workers' nodes: every pusher
// (one per node with local aggregation, else every worker) sends its m bytes cut into the S servers' shards (the
// largest `shard` bytes) at once. The slowest of: the node links, each direction (the node with the fewest servers
// sends the most out; the one with the most takes the most in), a server's port into its node (its own node's
// pushers), and a pusher's intra-node link (its bytes to its own node's servers).
double colocated_ps_round_seconds(const ClusterDescription& c, int64_t workers, int64_t servers,
                                  bool one_pusher_per_node, double m, double shard);

// Iterations a second (all workers together) the links carry when every worker's iteration sends `up` and
// receives `down` times m bytes from the servers, each server its shard (the largest `shard`), on a cluster whose
// servers run on its workers' nodes: the busiest node link in either direction, and a server's port into its node.
double colocated_ps_iterations_per_second(const ClusterDescription& c, int64_t workers, int64_t servers, double m,
                                          double shard, double up, double down);

// One model's transfer between a worker and the servers (the asynchronous models' push or pull, alpha included) on a
// cluster whose servers run on its workers' nodes: the shards of the other nodes' servers over the worker's link,
// those of its own node's over its intra-node link, at once.
double colocated_model_transfer_seconds(const ClusterDescription& c, int64_t workers, int64_t servers, double m);

// A worker's share of its node's uplink busy with one model of m bytes to the servers (ALADDIN's pace), on a cluster
// whose servers run on its workers' nodes: its own node's shards go over its intra-node link meanwhile.
double colocated_uplink_seconds(const ClusterDescription& c, int64_t workers, int64_t servers, double m);

}  // namespace distsgd::sim
