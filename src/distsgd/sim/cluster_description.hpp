// The cluster a prediction is for (spec/simulator.md, "Inputs"): link rates, latency, reduction cost. Read from a
// JSON file or taken from a preset; every preset names its source.
//   {"name": "10gbe", "source": "...", "worker_bytes_per_second": 1.17e9, "server_bytes_per_second": 1.17e9,
//    "alpha_seconds": 3e-5, "gamma_seconds_per_byte": 0,
//    "workers_per_node": 4, "intra_node_bytes_per_second": 12e9, "intra_node_alpha_seconds": 1e-5}
// Topology: workers fill nodes in rank order (block placement), `workers_per_node` to a node. The workers of one node
// share its network link (`worker_bytes_per_second` is the node's NIC, each direction) and talk to each other over
// the intra-node link (PCIe, NVLink); parameter servers each have a link of their own.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "distsgd/sim/collective_costs.hpp"

namespace distsgd::sim {

struct ClusterDescription {
  std::string name;
  std::string source;                      // where the figures come from
  double worker_bytes_per_second = 0;      // each worker's link
  double server_bytes_per_second = 0;      // each parameter server's link
  double alpha_seconds = 0;                // per message (collective steps, point to point)
  double gamma_seconds_per_byte = 0;       // reduction
  int64_t workers_per_node = 1;            // ranks sharing one node's link
  double intra_node_bytes_per_second = 0;  // between workers of one node; 0: as the node's link
  double intra_node_alpha_seconds = 0;

  int64_t node_of(int64_t worker) const { return worker / workers_per_node; }
  double intra_node_rate() const {
    return intra_node_bytes_per_second > 0 ? intra_node_bytes_per_second : worker_bytes_per_second;
  }

  // The cost of AR-SGD's ring over the workers' links.
  LinkCost allreduce_cost() const { return {alpha_seconds, 1.0 / worker_bytes_per_second, gamma_seconds_per_byte}; }
};

std::vector<std::string> cluster_preset_names();
// A preset by name, or a JSON file by path; throws Error naming the file, the field and what was expected, or
// listing the presets.
ClusterDescription load_cluster(const std::string& name_or_path);
ClusterDescription cluster_from_json(const nlohmann::json& json, const std::string& source);
nlohmann::json to_json(const ClusterDescription& cluster);

}  // namespace distsgd::sim
