#include "distsgd/algo/decentralized/gossip_header.hpp"

#include "distsgd/algo/wire_fields.hpp"

namespace distsgd::algo::decentralized {

void encode_gossip_header(const GossipHeader& header, double* values) {
  values[0] = static_cast<double>(kGossipMagic);
  values[1] = static_cast<double>(kGossipVersion);
  values[2] = static_cast<double>(header.kind);
  values[3] = static_cast<double>(header.step);
  values[4] = header.weight;
}

GossipHeader decode_gossip_header(const double* values, int64_t peer) {
  const wire::Source source{"gossip message", peer};
  wire::check_protocol(source, values[0], values[1], kGossipMagic, kGossipVersion);
  GossipHeader header;
  header.kind = static_cast<MessageKind>(
      wire::integer(source, "kind", values[2], 0, static_cast<int64_t>(MessageKind::kKeepAlive)));
  header.step = wire::integer(source, "step", values[3], 0, wire::kMaxExact);
  header.weight = wire::real(source, "weight", values[4], 0, 1);
  return header;
}

}  // namespace distsgd::algo::decentralized
