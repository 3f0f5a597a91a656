// The header of every gossip message (protocol.hpp) and its byte-level codec, without torch: float64[5] = {magic,
// protocol version, kind, step, weight}. The decoder refuses a message without distsgd's magic number and version
// and checks each field before the receiving thread acts on it.
#pragma once
#include <cstdint>

namespace distsgd::algo::decentralized {

constexpr int64_t kGossipMagic = 0x64734753;  // "dsGS"
constexpr int64_t kGossipVersion = 1;
constexpr int64_t kGossipHeaderSize = 5;

enum class MessageKind : int64_t { kDone = 0, kPush = 1, kPullRequest = 2, kExchange = 3, kKeepAlive = 4 };

struct GossipHeader {
  MessageKind kind = MessageKind::kDone;
  int64_t step = 0;
  double weight = 0;  // push-sum weight: the weights of all workers sum to 1
};

void encode_gossip_header(const GossipHeader& header, double* values);  // kGossipHeaderSize values
// Throws distsgd::Error naming the field, its value, the bound and `peer` when the header is malformed.
GossipHeader decode_gossip_header(const double* values, int64_t peer);

}  // namespace distsgd::algo::decentralized
