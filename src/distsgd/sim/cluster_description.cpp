#include "distsgd/sim/cluster_description.hpp"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"

namespace distsgd::sim {
namespace {

// Link presets of spec/simulator.md ("Communication costs": 10GbE ~1.17 GB/s with alpha 20-50 us over TCP, 25GbE
// ~2.9 GB/s, 56 Gb IB ~6.8 GB/s, 100 Gb IB ~12 GB/s) and distsgd's own emulated links, fitted by
// `distsgd commbench --net` (bench/README.md, 2026-11-22: send/recv 1/beta 0.117-0.120 GB/s at 1gbit,
// 0.0119 at 100mbit).
std::vector<ClusterDescription> presets() {
  const char* spec = "spec/simulator.md link presets (calibrate with distsgd commbench)";
  return {
      {"10gbe", spec, 1.17e9, 1.17e9, 30e-6, 0},
      {"25gbe", spec, 2.9e9, 2.9e9, 30e-6, 0},
      {"56gb-ib", spec, 6.8e9, 6.8e9, 5e-6, 0},
      {"100gb-ib", spec, 12e9, 12e9, 5e-6, 0},
      {"emulated-1gbit", "distsgd commbench --net 1gbit, bench/README.md (2026-11-22)", 0.118e9, 0.118e9, 100e-6, 0},
      {"emulated-100mbit", "distsgd commbench --net 100mbit, bench/README.md (2026-11-22)", 0.0119e9, 0.0119e9, 100e-6,
       0},
  };
}

double positive_field(const nlohmann::json& json, const std::string& source, const std::string& key, bool required) {
  const auto it = json.find(key);
  if (it == json.end()) {
    require(!required, source + ": " + key + ": missing");
    return 0;
  }
  const bool ok = it->is_number() && (required ? it->get<double>() > 0 : it->get<double>() >= 0);
  require(ok, source + ": " + key + ": expected a " + (required ? "positive" : "non-negative") + " number, got " +
                  it->dump());
  return it->get<double>();
}

}  // namespace

std::vector<std::string> cluster_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : presets()) names.push_back(p.name);
  return names;
}

ClusterDescription cluster_from_json(const nlohmann::json& json, const std::string& source) {
  require(json.is_object(), source + ": expected an object, got " + json.dump());
  ClusterDescription c;
  c.name = json.value("name", source);
  c.source = json.value("source", source);
  c.worker_bytes_per_second = positive_field(json, source, "worker_bytes_per_second", true);
  c.server_bytes_per_second = json.contains("server_bytes_per_second")
                                  ? positive_field(json, source, "server_bytes_per_second", true)
                                  : c.worker_bytes_per_second;
  c.alpha_seconds = positive_field(json, source, "alpha_seconds", false);
  c.gamma_seconds_per_byte = positive_field(json, source, "gamma_seconds_per_byte", false);
  if (json.contains("workers_per_node")) {
    const auto& w = json["workers_per_node"];
    require(w.is_number_integer() && w.get<int64_t>() >= 1,
            source + ": workers_per_node: expected a positive integer, got " + w.dump());
    c.workers_per_node = w.get<int64_t>();
  }
  c.intra_node_bytes_per_second = positive_field(json, source, "intra_node_bytes_per_second", false);
  c.intra_node_alpha_seconds = positive_field(json, source, "intra_node_alpha_seconds", false);
  return c;
}

ClusterDescription load_cluster(const std::string& name_or_path) {
  for (const auto& p : presets()) {
    if (p.name == name_or_path) return p;
  }
  require(std::filesystem::exists(name_or_path),
          "--cluster: '" + name_or_path + "' is neither a preset (" + join(cluster_preset_names()) + ") nor a file");
  std::ifstream file(name_or_path);
  const auto json = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
  require(!json.is_discarded(), name_or_path + ": not valid JSON");
  return cluster_from_json(json, name_or_path);
}

nlohmann::json to_json(const ClusterDescription& c) {
  return {{"name", c.name},
          {"source", c.source},
          {"worker_bytes_per_second", c.worker_bytes_per_second},
          {"server_bytes_per_second", c.server_bytes_per_second},
          {"alpha_seconds", c.alpha_seconds},
          {"gamma_seconds_per_byte", c.gamma_seconds_per_byte},
          {"workers_per_node", c.workers_per_node},
          {"intra_node_bytes_per_second", c.intra_node_bytes_per_second},
          {"intra_node_alpha_seconds", c.intra_node_alpha_seconds}};
}

}  // namespace distsgd::sim
