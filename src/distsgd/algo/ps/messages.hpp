// The headers of the parameter-server protocol (protocol.hpp) and their byte-level codec, without torch. A request
// header is float64[11] = {magic, version, kind, step, lr, clock, version of x~, entries, offset, numel,
// contributions}; a reply header float64[6] = {magic, version, kind, version of x~, alpha, slowest}. A decoder checks
// every field against the receiver's bounds (the shard's size, the number of workers) before any buffer is touched,
// and refuses a message that does not start with distsgd's magic number and protocol version.
#pragma once
#include <cstdint>

namespace distsgd::algo::ps {

constexpr int64_t kProtocolMagic = 0x64735053;  // "dsPS"
constexpr int64_t kProtocolVersion = 1;

enum class RequestKind : int64_t {
  kDone = 0,          // the worker has finished; no payload, no reply
  kGradient = 1,      // payload: gradient slice; reply: parameters (BSP, ASP)
  kPushGradient = 2,  // payload: gradient slice; no reply (SSP, ALADDIN)
  kPull = 3,          // no payload; reply: parameters (SSP gated by clock; evaluation with clock < 0)
  kParameters = 4,    // payload: the worker's parameter slice; reply: its new slice (EASGD)
  kRetire = 5,        // the worker takes no more steps (it may still pull for evaluation); no payload, no reply
  kKeepAlive = 6,     // the worker waits for the others (Communicator::meet), alive; no payload, no reply
};

struct Request {
  RequestKind kind = RequestKind::kDone;
  int64_t step = 0;
  double lr = 0;
  int64_t clock = 0;          // iterations the worker has completed (SSP); < 0: not gated
  int64_t version = 0;        // server version the worker's parameters derive from (staleness)
  int64_t entries = -1;       // payload: < 0 dense shard slice; >= 0 that many sparse entries (DGC)
  int64_t offset = 0;         // a dense payload's place in the shard's buffer ...
  int64_t numel = -1;         // ... and its length (< 0: the whole shard)
  int64_t contributions = 1;  // gradients summed in the payload (BSP local aggregation)
};
constexpr int64_t kRequestHeaderSize = 11;

// The elements of the shard a dense request carries: [request.offset, request.offset + this).
inline int64_t payload_numel(const Request& request, int64_t shard_numel) {
  return request.numel < 0 ? shard_numel : request.numel;
}

enum class ReplyKind : int64_t { kParameters = 1, kGoodbye = 2 };

struct Reply {
  ReplyKind kind = ReplyKind::kParameters;
  int64_t version = 0;   // updates the shard had applied when it replied
  double alpha = 0;      // mixing weight (ALADDIN)
  int64_t slowest = -1;  // SSP: the slowest active worker's clock at this shard (< 0: not known)
};
constexpr int64_t kReplyHeaderSize = 6;

// What the receiving shard knows, to bound a request: who sent it, the shard's index and size, how many workers
// the run has (the most gradients one push may sum).
struct RequestBounds {
  int64_t peer = -1;
  int64_t shard = 0;
  int64_t shard_numel = 0;
  int64_t workers = 1;
};

void encode_request(const Request& request, double* header);  // kRequestHeaderSize values
// Throws distsgd::Error naming the field, its value, the bound and the peer when the header is malformed.
Request decode_request(const double* header, const RequestBounds& bounds);

void encode_reply(const Reply& reply, double* header);  // kReplyHeaderSize values
// `peer`: the server's rank (for the error text).
Reply decode_reply(const double* header, int64_t peer);

}  // namespace distsgd::algo::ps
