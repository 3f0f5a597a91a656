// libFuzzer target: reading a model profile (distsgd simulate --profile FILE): JSON parsing as read_json_file does
// it, then the profile's fields (src/distsgd/sim/model_profile.cpp). A bad file must end in one distsgd::Error; any
// other exception (an unexplained nlohmann or standard-library message) or a crash is a finding.
#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/sim/platform/model_profile.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const nlohmann::json json = distsgd::parse_json_text(std::string(data, data + size), "profile.json");
    distsgd::sim::model_profile_from_json(json, "profile.json");
  } catch (const distsgd::Error&) {
  }
  return 0;
}
