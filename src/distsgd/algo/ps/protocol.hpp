// The request/reply protocol between workers and parameter-server shards. Every request is a small header
// (float64: kind, step, lr, clock, version, entries, offset, numel, contributions) followed, for kinds that carry
// one, by a payload: the shard's slice or a piece of it (wait-free backprop: elements [offset, offset + numel) of the
// shard's buffer), or for a compressed gradient (--compress dgc) `entries` selected entries in DGC's packed format,
// indexed in the shard's buffer. Replies are a header (kind, version, alpha, slowest) and the values of the piece
// the request carried (the whole shard for a pull). Server-initiated pushes (ALADDIN) use their own tags so they
// never mix with replies. c10d matches point-to-point messages by (source, tag), in the order they were posted.
#pragma once
#include "distsgd/algo/compression/dgc.hpp"
#include "distsgd/algo/ps/shard_layout.hpp"
#include "distsgd/algo/ps/shard_pieces.hpp"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace distsgd::comm {
class Communicator;
class Work;
}  // namespace distsgd::comm

namespace distsgd::algo::ps {

enum class RequestKind : int64_t {
  kDone = 0,          // the worker has finished; no payload, no reply
  kGradient = 1,      // payload: gradient slice; reply: parameters (BSP, ASP)
  kPushGradient = 2,  // payload: gradient slice; no reply (SSP, ALADDIN)
  kPull = 3,          // no payload; reply: parameters (SSP gated by clock; evaluation with clock < 0)
  kParameters = 4,    // payload: the worker's parameter slice; reply: its new slice (EASGD)
  kRetire = 5,        // the worker takes no more steps (it may still pull for evaluation); no payload, no reply
};

enum Tag : int64_t {
  kHeaderTag = 101,
  kPayloadTag = 102,
  kReplyHeaderTag = 103,
  kReplyTag = 104,
  kPushHeaderTag = 105,
  kPushTag = 106,
  kHostGradientTag = 107,    // BSP local aggregation: a worker's gradient to its host's leader
  kHostParametersTag = 108,  // ... and the new parameters back
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
constexpr int64_t kRequestHeaderSize = 9;

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
constexpr int64_t kReplyHeaderSize = 4;

at::Tensor encode(const Request& request);
Request decode_request(const at::Tensor& header);
at::Tensor encode(const Reply& reply);
Reply decode_reply(const at::Tensor& header);

// Worker side: talks to every shard.
class PsClient {
 public:
  PsClient(comm::Communicator& comm, std::vector<ShardRange> shards);

  int64_t server_rank(size_t shard) const;
  const std::vector<ShardRange>& shards() const { return shards_; }

  // Sends the request header and the slice of `payload` (a flat vector; undefined: none) to every shard;
  // returns when sent.
  void send_to_all(const Request& request, const at::Tensor& payload);
  // One piece: the header (with the piece's place in its shard) and `values` (piece-sized, contiguous), without
  // waiting; the sends are appended to `sends` and must be waited before `values` changes.
  void send_piece(Request request, const Piece& piece, const at::Tensor& values, std::vector<comm::Work>& sends);
  // Posts the receive of one reply from a shard: its header and `values` (the size the request carried).
  void receive_reply(size_t shard, at::Tensor header, at::Tensor values, std::vector<comm::Work>& receives);
  // A compressed gradient: each shard gets the entries it holds; returns when sent ...
  void send_sparse_to_all(Request request, const compression::SparseGradient& gradient);
  // ... or without waiting (the messages live in the returned sends).
  std::vector<comm::Work> send_sparse_to_all_async(Request request, const compression::SparseGradient& gradient);
  // Receives every shard's reply into the slices of `flat` (in place); returns the replies' headers.
  std::vector<Reply> receive_from_all(at::Tensor& flat);
  // A pull of x~ into flat, not gated by clocks (evaluation).
  std::vector<Reply> pull_all(at::Tensor& flat);
  int64_t bytes_sent() const { return bytes_sent_; }
  comm::Communicator& comm() { return comm_; }

 private:
  comm::Communicator& comm_;
  std::vector<ShardRange> shards_;
  int64_t bytes_sent_ = 0;
};

}  // namespace distsgd::algo::ps
