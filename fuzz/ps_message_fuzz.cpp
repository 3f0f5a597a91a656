// libFuzzer target: the parameter-server header decoders (src/distsgd/algo/ps/messages.hpp). Input: the receiving
// shard's size and the run's worker count (two little-endian int64), then a request header (11 float64); the reply
// decoder reads the first 6 of those. A decoded request must describe a piece inside the shard, as the shard
// server relies on; any other outcome than a decoded header or a distsgd::Error is a finding.
#include "distsgd/algo/ps/messages.hpp"
#include "distsgd/core/error.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>

using namespace distsgd::algo::ps;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int64_t limits[2];
  double header[kRequestHeaderSize];
  if (size < sizeof limits + sizeof header) return 0;
  std::memcpy(limits, data, sizeof limits);
  std::memcpy(header, data + sizeof limits, sizeof header);
  RequestBounds bounds;
  bounds.peer = 1;
  bounds.shard_numel = limits[0] & ((int64_t(1) << 40) - 1);  // a shard of up to 2^40 elements
  bounds.workers = 1 + (limits[1] & 0xffff);
  try {
    const Request r = decode_request(header, bounds);
    const int64_t numel = payload_numel(r, bounds.shard_numel);
    if (r.offset < 0 || numel < 0 || r.offset + numel > bounds.shard_numel) std::abort();
    if (r.entries > bounds.shard_numel || r.contributions < 1 || r.contributions > bounds.workers) std::abort();
  } catch (const distsgd::Error&) {
  }
  try {
    const Reply reply = decode_reply(header, 2);
    if (reply.version < 0 || !(reply.alpha >= 0 && reply.alpha <= 1)) std::abort();
  } catch (const distsgd::Error&) {
  }
  return 0;
}
