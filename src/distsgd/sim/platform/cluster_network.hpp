// The cluster as ports of the flow network (cluster_description.hpp): each node has a NIC, one port each way,
// shared by its workers' traffic to other nodes and to the servers; each worker has its own link into its node's
// fabric (PCIe, NVLink: `intra_node_bytes_per_second`), one port each way, for traffic to workers of the same node;
// each parameter server has its own NIC, or, on the workers' nodes (ClusterDescription::server_placement), its node's
// NIC for the other nodes and a port of its own into the node for the node's workers. A worker's link multiplier
// (heterogeneity) scales its links: with one worker per node its node's NIC, with several an extra port of its own in
// front of the shared NIC.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "distsgd/sim/engine/flow_network.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"

namespace distsgd::sim {

class ClusterNetwork {
 public:
  // link_multipliers: one per worker (empty: all 1).
  ClusterNetwork(FlowNetwork& network, const ClusterDescription& cluster, int64_t workers, int64_t servers,
                 const std::vector<double>& link_multipliers);

  Path worker_to_worker(int64_t from, int64_t to) const;
  double worker_to_worker_alpha(int64_t from, int64_t to) const;
  Path worker_to_server(int64_t worker, int64_t server) const;
  Path server_to_worker(int64_t server, int64_t worker) const;
  // A message's start-up between a worker and a server: the network's, or the node's where they share one.
  double worker_server_alpha(int64_t worker, int64_t server) const;
  double alpha() const { return cluster_.alpha_seconds; }
  const ClusterDescription& description() const { return cluster_; }

  // A message over `path` (one of the paths above): FlowNetwork::transfer, except that where the cluster's NICs send
  // one message at a time (ClusterDescription::egress_queue kFifo) a message leaving through a node's or a server's
  // NIC waits until the NIC's earlier messages have arrived; its start-up (latency) runs meanwhile, so only the
  // bytes queue. Intra-node messages never wait.
  void transfer(const Path& path, double bytes, double latency, std::function<void()> done);
  bool same_node(int64_t a, int64_t b) const { return cluster_.node_of(a) == cluster_.node_of(b); }

  // Ports by role, for utilisation figures.
  struct PortGroup {
    const char* name;
    std::vector<PortId> ports;
  };
  std::vector<PortGroup> port_groups() const;
  std::vector<PortId> server_in_ports() const { return server_in_; }
  std::vector<PortId> server_out_ports() const { return server_out_; }

 private:
  struct Pending {
    Path path;
    double bytes = 0, latency = 0;
    double sent = 0;  // when the sender handed it over
    std::function<void()> done;
  };
  struct Egress {
    bool nic = false;  // a node's or a server's NIC out
    bool busy = false;
    std::deque<Pending> waiting;
  };
  // The NIC a message over `path` leaves through, or -1 (intra-node; or the cluster's NICs share fairly).
  PortId fifo_egress_of(const Path& path) const;
  void start(PortId egress, Pending message);

  FlowNetwork& network_;
  const ClusterDescription& cluster_;
  std::vector<Egress> egress_;                  // by port, the NICs' queues (kFifo only; empty otherwise)
  std::vector<PortId> node_out_, node_in_;      // per node
  std::vector<PortId> worker_out_, worker_in_;  // per worker, -1 when it has none (its node's NIC is its own)
  std::vector<PortId> intra_out_, intra_in_;    // per worker, when its node holds several
  std::vector<PortId> server_out_, server_in_;  // per server (on the workers' nodes: its node's NIC)
  // Servers on the workers' nodes: each one's node, and its port into the node (empty otherwise).
  std::vector<int64_t> server_node_;
  std::vector<PortId> server_local_out_, server_local_in_;
  bool on_server_node(int64_t worker, int64_t server) const;
};

}  // namespace distsgd::sim
