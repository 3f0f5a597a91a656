#include "distsgd/sim/platform/cluster_network.hpp"

#include <algorithm>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {

ClusterNetwork::ClusterNetwork(FlowNetwork& network, const ClusterDescription& cluster, int64_t workers,
                               int64_t servers, const std::vector<double>& link_multipliers)
    : network_(network), cluster_(cluster) {
  require(link_multipliers.empty() || static_cast<int64_t>(link_multipliers.size()) == workers,
          "simulator: one link multiplier per worker");
  const auto multiplier = [&](int64_t w) { return link_multipliers.empty() ? 1.0 : link_multipliers[w]; };
  const int64_t per_node = cluster.workers_per_node;
  const int64_t nodes = (workers + per_node - 1) / per_node;
  // A node holding a single worker: its NIC is that worker's own link, and it has no intra-node traffic.
  const auto alone = [&](int64_t node) { return std::min(per_node, workers - node * per_node) == 1; };
  for (int64_t n = 0; n < nodes; ++n) {
    const double rate = cluster.worker_bytes_per_second * (alone(n) ? multiplier(n * per_node) : 1.0);
    node_out_.push_back(network.add_port(rate));
    node_in_.push_back(network.add_port(rate));
  }
  for (int64_t w = 0; w < workers; ++w) {
    const bool shares_node = !alone(cluster.node_of(w));
    const bool own_port = shares_node && multiplier(w) != 1.0;
    worker_out_.push_back(own_port ? network.add_port(cluster.worker_bytes_per_second * multiplier(w)) : -1);
    worker_in_.push_back(own_port ? network.add_port(cluster.worker_bytes_per_second * multiplier(w)) : -1);
    intra_out_.push_back(shares_node ? network.add_port(cluster.intra_node_rate() * multiplier(w)) : -1);
    intra_in_.push_back(shares_node ? network.add_port(cluster.intra_node_rate() * multiplier(w)) : -1);
  }
  for (int64_t s = 0; s < servers; ++s) {
    if (cluster.servers_on_worker_nodes()) {
      // Its node's NIC for the other nodes' workers, and a link of its own into the node for the node's workers.
      const int64_t node = cluster.node_of_server(s, workers);
      server_node_.push_back(node);
      server_out_.push_back(node_out_[node]);
      server_in_.push_back(node_in_[node]);
      server_local_out_.push_back(network.add_port(cluster.intra_node_rate()));
      server_local_in_.push_back(network.add_port(cluster.intra_node_rate()));
    } else {
      server_out_.push_back(network.add_port(cluster.server_bytes_per_second));
      server_in_.push_back(network.add_port(cluster.server_bytes_per_second));
    }
  }
  if (cluster.egress_queue == ClusterDescription::EgressQueue::kFifo) {
    egress_.resize(network.port_count());
    for (const PortId port : node_out_) egress_[static_cast<size_t>(port)].nic = true;
    for (const PortId port : server_out_) egress_[static_cast<size_t>(port)].nic = true;
  }
}

PortId ClusterNetwork::fifo_egress_of(const Path& path) const {
  if (egress_.empty()) return -1;  // the NICs share fairly
  for (int i = 0; i < path.count; ++i) {
    const auto port = static_cast<size_t>(path.ports[static_cast<size_t>(i)]);
    if (port < egress_.size() && egress_[port].nic) return path.ports[static_cast<size_t>(i)];
  }
  return -1;
}

void ClusterNetwork::transfer(const Path& path, double bytes, double latency, std::function<void()> done) {
  const PortId egress = fifo_egress_of(path);
  if (egress < 0) {
    network_.transfer(path, bytes, latency, std::move(done));
    return;
  }
  Egress& queue = egress_[static_cast<size_t>(egress)];
  Pending message{path, bytes, latency, network_.now(), std::move(done)};
  if (queue.busy) {
    queue.waiting.push_back(std::move(message));
    return;
  }
  queue.busy = true;
  start(egress, std::move(message));
}

// The NIC's next message starts as this one arrives, before the receiver reacts to it (the same instant either way).
void ClusterNetwork::start(PortId egress, Pending message) {
  const double latency_left = std::max(0.0, message.latency - (network_.now() - message.sent));
  network_.transfer(message.path, message.bytes, latency_left, [this, egress, done = std::move(message.done)] {
    Egress& queue = egress_[static_cast<size_t>(egress)];
    if (queue.waiting.empty()) {
      queue.busy = false;
    } else {
      Pending next = std::move(queue.waiting.front());
      queue.waiting.pop_front();
      start(egress, std::move(next));
    }
    done();
  });
}

bool ClusterNetwork::on_server_node(int64_t worker, int64_t server) const {
  return !server_node_.empty() && server_node_[server] == cluster_.node_of(worker);
}

double ClusterNetwork::worker_server_alpha(int64_t worker, int64_t server) const {
  return on_server_node(worker, server) ? cluster_.intra_node_alpha() : cluster_.alpha_seconds;
}

Path ClusterNetwork::worker_to_worker(int64_t from, int64_t to) const {
  Path path;
  if (same_node(from, to)) {
    path.add(intra_out_[from]);
    path.add(intra_in_[to]);
    return path;
  }
  if (worker_out_[from] >= 0) path.add(worker_out_[from]);
  path.add(node_out_[cluster_.node_of(from)]);
  path.add(node_in_[cluster_.node_of(to)]);
  if (worker_in_[to] >= 0) path.add(worker_in_[to]);
  return path;
}

double ClusterNetwork::worker_to_worker_alpha(int64_t from, int64_t to) const {
  return same_node(from, to) ? cluster_.intra_node_alpha() : cluster_.alpha_seconds;
}

Path ClusterNetwork::worker_to_server(int64_t worker, int64_t server) const {
  Path path;
  if (on_server_node(worker, server)) {
    if (intra_out_[worker] >= 0) path.add(intra_out_[worker]);
    path.add(server_local_in_[server]);
    return path;
  }
  if (worker_out_[worker] >= 0) path.add(worker_out_[worker]);
  path.add(node_out_[cluster_.node_of(worker)]);
  path.add(server_in_[server]);
  return path;
}

Path ClusterNetwork::server_to_worker(int64_t server, int64_t worker) const {
  Path path;
  if (on_server_node(worker, server)) {
    path.add(server_local_out_[server]);
    if (intra_in_[worker] >= 0) path.add(intra_in_[worker]);
    return path;
  }
  path.add(server_out_[server]);
  path.add(node_in_[cluster_.node_of(worker)]);
  if (worker_in_[worker] >= 0) path.add(worker_in_[worker]);
  return path;
}

std::vector<ClusterNetwork::PortGroup> ClusterNetwork::port_groups() const {
  const auto present = [](const std::vector<PortId>& ports) {
    std::vector<PortId> out;
    for (const PortId p : ports) {
      if (p >= 0) out.push_back(p);
    }
    return out;
  };
  std::vector<PortGroup> groups = {{"node_out", node_out_},
                                   {"node_in", node_in_},
                                   {"worker_out", present(worker_out_)},
                                   {"worker_in", present(worker_in_)},
                                   {"intra_node_out", present(intra_out_)},
                                   {"intra_node_in", present(intra_in_)},
                                   // Servers on the workers' nodes: their NICs are node_out and node_in.
                                   {"server_out", server_node_.empty() ? server_out_ : std::vector<PortId>{}},
                                   {"server_in", server_node_.empty() ? server_in_ : std::vector<PortId>{}},
                                   {"server_local_out", server_local_out_},
                                   {"server_local_in", server_local_in_}};
  std::vector<PortGroup> used;
  for (auto& g : groups) {
    if (!g.ports.empty()) used.push_back(std::move(g));
  }
  return used;
}

}  // namespace distsgd::sim
