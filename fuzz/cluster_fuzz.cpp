// libFuzzer target: reading a cluster file (distsgd simulate --cluster FILE): JSON parsing as read_json_file does
// it, then the description's fields (src/distsgd/sim/cluster_description.cpp). A bad file must end in one
// distsgd::Error; any other exception or a crash is a finding.
#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const nlohmann::json json = distsgd::parse_json_text(std::string(data, data + size), "cluster.json");
    distsgd::sim::cluster_from_json(json, "cluster.json");
  } catch (const distsgd::Error&) {
  }
  return 0;
}
