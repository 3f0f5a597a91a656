// The request/reply protocol between workers and parameter-server shards. Every request is a small header
// (float64[4]: kind, step, lr, clock) followed, for kinds that carry one, by a payload of the shard's size;
// replies are a payload of the shard's size. Each message kind has its own tag, as c10d point-to-point matches
// messages by (source, tag).
#pragma once
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
  kDone = 0,      // the worker has finished; no payload, no reply
  kGradient = 1,  // payload: gradient slice
  kPull = 2,      // no payload; reply: parameters
  kParameters = 3,  // payload: the worker's parameter slice (EASGD)
};

enum Tag : int64_t { kHeaderTag = 101, kPayloadTag = 102, kReplyTag = 103 };

struct Request {
  RequestKind kind = RequestKind::kDone;
  int64_t step = 0;
  double lr = 0;
  int64_t clock = 0;
};

// Worker side: talks to every shard.
class PsClient {
 public:
  PsClient(comm::Communicator& comm, std::vector<ShardRange> shards);

  int64_t server_rank(size_t shard) const;
  const std::vector<ShardRange>& shards() const { return shards_; }

  // Sends the request header and the slice of `payload` (a flat vector) to every shard; returns when sent.
  void send_to_all(const Request& request, const at::Tensor& payload);
  // Receives every shard's reply into the slices of `flat` (in place).
  void receive_from_all(at::Tensor& flat);
  int64_t bytes_sent() const { return bytes_sent_; }

 private:
  comm::Communicator& comm_;
  std::vector<ShardRange> shards_;
  std::vector<at::Tensor> headers_;  // kept alive until their sends complete
  int64_t bytes_sent_ = 0;
};

at::Tensor encode(const Request& request);
Request decode(const at::Tensor& header);

}  // namespace distsgd::algo::ps
