// The cluster a prediction is for (spec/simulator.md, "Inputs"): link rates, latency, reduction cost. Read from a
// JSON file or taken from a preset; every preset names its source.
//   {"name": "10gbe", "source": "...", "worker_bytes_per_second": 1.17e9, "server_bytes_per_second": 1.17e9,
//    "alpha_seconds": 3e-5, "gamma_seconds_per_byte": 0}
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "distsgd/sim/collective_costs.hpp"

namespace distsgd::sim {

struct ClusterDescription {
  std::string name;
  std::string source;                  // where the figures come from
  double worker_bytes_per_second = 0;  // each worker's link
  double server_bytes_per_second = 0;  // each parameter server's link
  double alpha_seconds = 0;            // per message (collective steps, point to point)
  double gamma_seconds_per_byte = 0;   // reduction

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
