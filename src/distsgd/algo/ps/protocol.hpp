// The request/reply protocol between workers and parameter-server shards. Every request is a small header
// (messages.hpp: float64 magic, protocol version, kind, step, lr, clock, version, entries, offset, numel,
// contributions; checked against the shard's bounds on arrival) followed, for kinds that carry
// one, by a payload: the shard's slice or a piece of it (wait-free backprop: elements [offset, offset + numel) of the
// shard's buffer), or for a compressed gradient (--compress dgc) `entries` selected entries in DGC's packed format,
// indexed in the shard's buffer. Replies are a header (magic, protocol version, kind, version, alpha, slowest) and the
// values of the piece the request carried (the whole shard for a pull). Server-initiated pushes (ALADDIN) use their own
// tags so they never mix with replies. c10d matches point-to-point messages by (source, tag), in the order they were
// posted.
#pragma once
#include "distsgd/algo/compression/dgc.hpp"
#include "distsgd/algo/ps/messages.hpp"
#include "distsgd/algo/ps/shard_layout.hpp"
#include "distsgd/algo/ps/shard_pieces.hpp"
#include "distsgd/comm/keep_alive_thread.hpp"
#include "distsgd/core/runtime.hpp"

#include <ATen/core/Tensor.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

namespace distsgd::comm {
class Communicator;
class Work;
}  // namespace distsgd::comm

namespace distsgd::algo::ps {

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

// Headers as float64 tensors (messages.hpp has the layout and the checks).
at::Tensor encode(const Request& request);
Request decode_request(const at::Tensor& header, const RequestBounds& bounds);
at::Tensor encode(const Reply& reply);
Reply decode_reply(const at::Tensor& header, int64_t peer);

// Worker side: talks to every shard. A shard's wait for this worker's next request is bounded by the timeout, so
// from its creation to finish() the client's keep-alive thread (comm/keep_alive_thread.hpp) sends every shard a
// request that asks nothing whenever the worker sent none for a quarter of the timeout: a worker whose training
// thread waits never lets a shard give up on it.
class PsClient {
 public:
  PsClient(comm::Communicator& comm, std::vector<ShardRange> shards);
  ~PsClient();
  PsClient(const PsClient&) = delete;
  PsClient& operator=(const PsClient&) = delete;

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
  // Stops the keep-alives and tells every shard this worker is done (kDone); nothing may be sent afterwards.
  void finish();
  int64_t bytes_sent() const { return bytes_sent_; }
  comm::Communicator& comm() { return comm_; }

 private:
  comm::Work send(const at::Tensor& tensor, size_t shard, int64_t tag);  // every send: notes the time
  void keep_alive();        // one round of the keep-alive thread: to every shard, when due
  void stop_keep_alives();  // and waits for the last ones sent

  comm::Communicator& comm_;
  std::vector<ShardRange> shards_;
  int64_t bytes_sent_ = 0;
  std::atomic<Clock::rep> last_sent_;              // Clock ticks of the last send to any shard
  std::vector<comm::Work> keep_alives_in_flight_;  // the keep-alive thread's, then stop_keep_alives()'s
  comm::KeepAliveThread keep_alives_;              // last: it uses the members above
};

}  // namespace distsgd::algo::ps
