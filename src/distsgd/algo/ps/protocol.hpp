// The request/reply protocol between workers and parameter-server shards. Every request is a small header
// (float64: kind, step, lr, clock, version, entries) followed, for kinds that carry one, by a payload: the shard's
// slice, or for a compressed gradient (--compress dgc) `entries` selected entries in DGC's packed format.
// Replies are a header (kind, version, alpha) and a shard-sized payload. Server-initiated pushes (ALADDIN) use
// their own tags so they never mix with replies. c10d matches point-to-point messages by (source, tag).
#pragma once
#include "distsgd/algo/compression/dgc.hpp"
#include "distsgd/algo/ps/shard_layout.hpp"

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
};

struct Request {
  RequestKind kind = RequestKind::kDone;
  int64_t step = 0;
  double lr = 0;
  int64_t clock = 0;     // iterations the worker has completed (SSP); < 0: not gated
  int64_t version = 0;   // server version the worker's parameters derive from (staleness)
  int64_t entries = -1;  // payload: < 0 dense shard slice; >= 0 that many sparse entries (DGC)
};
constexpr int64_t kRequestHeaderSize = 6;

enum class ReplyKind : int64_t { kParameters = 1, kGoodbye = 2 };

struct Reply {
  ReplyKind kind = ReplyKind::kParameters;
  int64_t version = 0;  // updates the shard had applied when it replied
  double alpha = 0;     // mixing weight (ALADDIN)
};
constexpr int64_t kReplyHeaderSize = 3;

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
  // The same without waiting: the returned sends must be waited before `payload` changes.
  std::vector<comm::Work> send_to_all_async(const Request& request, const at::Tensor& payload);
  // A compressed gradient: each shard gets the entries in its range; returns when sent.
  void send_sparse_to_all(Request request, const compression::SparseGradient& gradient);
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
