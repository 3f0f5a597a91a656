#include "distsgd/algo/ps/messages.hpp"

#include "distsgd/algo/wire_fields.hpp"

#include <limits>
#include <string>

namespace distsgd::algo::ps {

void encode_request(const Request& r, double* h) {
  const double values[kRequestHeaderSize] = {static_cast<double>(kProtocolMagic),
                                             static_cast<double>(kProtocolVersion),
                                             static_cast<double>(r.kind),
                                             static_cast<double>(r.step),
                                             r.lr,
                                             static_cast<double>(r.clock),
                                             static_cast<double>(r.version),
                                             static_cast<double>(r.entries),
                                             static_cast<double>(r.offset),
                                             static_cast<double>(r.numel),
                                             static_cast<double>(r.contributions)};
  for (int64_t i = 0; i < kRequestHeaderSize; ++i) h[i] = values[i];
}

Request decode_request(const double* h, const RequestBounds& b) {
  const wire::Source source{"parameter-server request to shard " + std::to_string(b.shard), b.peer};
  wire::check_protocol(source, h[0], h[1], kProtocolMagic, kProtocolVersion);
  Request r;
  r.kind =
      static_cast<RequestKind>(wire::integer(source, "kind", h[2], 0, static_cast<int64_t>(RequestKind::kKeepAlive)));
  r.step = wire::integer(source, "step", h[3], 0, wire::kMaxExact);
  r.lr = wire::real(source, "lr", h[4], 0, std::numeric_limits<double>::max());
  r.clock = wire::integer(source, "clock", h[5], -1, wire::kMaxExact);
  r.version = wire::integer(source, "version", h[6], 0, wire::kMaxExact);
  // A compressed gradient holds at most one entry per element of the shard.
  r.entries = wire::integer(source, "entries", h[7], -1, b.shard_numel);
  r.offset = wire::integer(source, "offset", h[8], 0, b.shard_numel);
  // The piece [offset, offset + numel) lies within the shard.
  r.numel = wire::integer(source, "numel", h[9], -1, b.shard_numel - r.offset);
  if (r.numel < 0 && r.offset != 0) wire::integer(source, "offset (of a whole-shard payload)", h[8], 0, 0);
  r.contributions = wire::integer(source, "contributions", h[10], 1, b.workers);
  return r;
}

void encode_reply(const Reply& r, double* h) {
  const double values[kReplyHeaderSize] = {static_cast<double>(kProtocolMagic),
                                           static_cast<double>(kProtocolVersion),
                                           static_cast<double>(r.kind),
                                           static_cast<double>(r.version),
                                           r.alpha,
                                           static_cast<double>(r.slowest)};
  for (int64_t i = 0; i < kReplyHeaderSize; ++i) h[i] = values[i];
}

Reply decode_reply(const double* h, int64_t peer) {
  const wire::Source source{"parameter-server reply", peer};
  wire::check_protocol(source, h[0], h[1], kProtocolMagic, kProtocolVersion);
  Reply r;
  r.kind = static_cast<ReplyKind>(wire::integer(source, "kind", h[2], static_cast<int64_t>(ReplyKind::kParameters),
                                                static_cast<int64_t>(ReplyKind::kGoodbye)));
  r.version = wire::integer(source, "version", h[3], 0, wire::kMaxExact);
  r.alpha = wire::real(source, "alpha", h[4], 0, 1);
  r.slowest = wire::integer(source, "slowest", h[5], -1, wire::kMaxExact);
  return r;
}

}  // namespace distsgd::algo::ps
