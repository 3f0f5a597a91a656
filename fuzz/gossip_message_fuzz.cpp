// libFuzzer target: the gossip header decoder (src/distsgd/algo/decentralized/gossip_header.hpp). Input: a header
// (5 float64). A decoded header has a known kind, a non-negative step and a weight in [0, 1]; any other outcome
// than a decoded header or a distsgd::Error is a finding.
#include "distsgd/algo/decentralized/gossip_header.hpp"
#include "distsgd/core/error.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>

using namespace distsgd::algo::decentralized;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  double header[kGossipHeaderSize];
  if (size < sizeof header) return 0;
  std::memcpy(header, data, sizeof header);
  try {
    const GossipHeader h = decode_gossip_header(header, 3);
    const auto kind = static_cast<int64_t>(h.kind);
    if (kind < 0 || kind > static_cast<int64_t>(MessageKind::kKeepAlive)) std::abort();
    if (h.step < 0 || !(h.weight >= 0 && h.weight <= 1)) std::abort();
  } catch (const distsgd::Error&) {
  }
  return 0;
}
