// A worker's dense gradient uplink to the parameter-server shards (BSP, ASP, SSP, ALADDIN).
//   --overlap none: after backward, one message per shard.
//   --overlap wfbp: wait-free backprop (spec: "Optimization techniques" 2): the gradient buckets cut at shard
//     boundaries (ps/shard_pieces.hpp), each piece pushed from the backward thread as soon as its bucket is ready;
//     the replies land in a staging buffer while backward goes on (writing parameters that backward may still
//     read would race with it) and are copied into the parameters after backward.
// Pushes are answered (BSP, ASP: every piece by the shard's new values of it) or not (SSP, ALADDIN). Unanswered
// pushes are never waited for: they go from a small ring of send buffers, and the worker waits only when the
// buffer it needs still has sends in flight, i.e. when the servers are a whole ring of iterations behind (a send
// completes only once the shard has posted its receive, so waiting on each would expose every server delay).
#pragma once
#include "distsgd/algo/allreduce/gradient_buckets.hpp"
#include "distsgd/algo/ps/protocol.hpp"
#include "distsgd/core/timer.hpp"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace distsgd {
class Timeline;
}
namespace distsgd::models {
class Model;
}

namespace distsgd::algo::ps {

struct PushOptions {
  bool wfbp = false;     // pieces during backward (else whole shards after it)
  bool replies = false;  // each piece is answered with the shard's new values of it
  // Unanswered pushes: buffers in the ring (iterations the servers may fall behind before the worker waits).
  int64_t send_buffers = 4;
  // wfbp: the caller hands out each bucket with push_bucket() (BSP's local aggregation, once the host's sum of it
  // is made) instead of the backward pass's hooks.
  bool caller_hands_out = false;
};

class GradientPush {
 public:
  // What to send for elements [offset, offset + numel) of the flat vector (the gradient, or a direction computed
  // from it); called once per element per step, on the backward thread under wfbp. The result must stay unchanged
  // until the push is finished (answered pushes) or copied (unanswered ones are always copied into the ring).
  using Values = std::function<at::Tensor(int64_t offset, int64_t numel)>;

  // `buckets`: the wfbp buckets (ignored without wfbp). Replies land in `params` (the flat parameters).
  GradientPush(PsClient& client, models::Model& model, at::Tensor params, std::vector<Bucket> buckets,
               PushOptions options, Values values, Timeline& timeline, Stopwatch& waiting);
  ~GradientPush();

  // Before backward: the header every piece of this step carries. Unanswered pushes take the next ring buffer
  // here (waiting, as exposed communication, if its sends are still in flight).
  void start(const Request& request);
  // With caller_hands_out: pushes bucket b's pieces (b = 0, 1, ... in order; from any one thread at a time).
  void push_bucket(size_t bucket);
  // After backward: pushes the pieces backward did not hand out (all of them without wfbp).
  void push_rest();
  // Answered pushes, after push_rest(): waits for every reply, writes them into the parameters, and returns
  // shard 0's last reply.
  Reply finish();
  // Waits for every send still in flight (before the worker says it is done).
  void drain();

  int64_t pieces_per_step() const;
  bool wait_free_backprop() const { return options_.wfbp; }

 private:
  struct InFlight;
  struct Slot;
  struct PendingReply;
  void push_piece(const Piece& piece);
  void wait_slot(Slot& slot);

  PsClient& client_;
  at::Tensor params_;
  PushOptions options_;
  Values values_;
  Timeline& timeline_;
  Stopwatch& waiting_;
  std::vector<std::vector<Piece>> pieces_;  // per bucket (one bucket, the whole shards, without wfbp)
  std::vector<int64_t> wire_offset_;        // where each shard starts in a buffer of every shard back to back
  int64_t wire_numel_ = 0;
  std::vector<std::unique_ptr<Slot>> slots_;
  size_t current_ = 0;
  at::Tensor incoming_;  // replies of pieces that cannot land in place (wire order)
  std::vector<PendingReply> replies_;
  std::vector<comm::Work> receives_;
  Request request_;
  size_t next_bucket_ = 0;
  std::unique_ptr<BucketReadyTracker> tracker_;
};

}  // namespace distsgd::algo::ps
