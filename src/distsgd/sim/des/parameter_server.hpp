// The parameter-server substrate of the discrete-event simulator, as algo/ps/ runs it:
//   shards       the model cut into S shards (shard_layout.hpp)
//   pieces       with wait-free backprop (--overlap wfbp, the default) the gradient buckets of AR-SGD cut at shard
//                boundaries (shard_pieces.cpp), each pushed when its bucket's gradients are ready; without, one piece
//                per shard after backward
//   uplink       a worker's gradient pushes (gradient_push.cpp): answered pushes (BSP, ASP) end in "push, wait for
//                reply" until every piece's reply is back; unanswered ones (SSP, ALADDIN) go from a ring of 4 send
//                buffers and the worker waits ("wait for a send buffer") only when the buffer it needs still has sends
//                in flight
//   requests     a message to every shard at once and the replies (PsClient: pulls, EASGD's exchange, DGC)
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "distsgd/sim/analytical/shard_layout.hpp"
#include "distsgd/sim/des/context.hpp"
#include "distsgd/sim/des/workload.hpp"

namespace distsgd::sim {

struct Piece {
  int64_t shard = 0;
  int64_t local_offset = 0, numel = 0;  // elements, in the shard's buffer
  int64_t index = 0;                    // among the shard's pieces of one step
  bool last = false;                    // the shard's last piece of a step: the worker's gradient is complete
  double bytes = 0;
};
// The pieces of each bucket (in bucket order, then shard order); `buckets` null: one bucket of whole shards.
std::vector<std::vector<Piece>> cut_at_shards(const ModelProfile& profile, const ShardRanges& shards,
                                              const BucketLayout* buckets);

class GradientUplink {
 public:
  // Runs when a piece reaches its shard, with the worker's version and iteration when it pushed.
  using AtServer = std::function<void(int64_t worker, const Piece& piece, int64_t version, int64_t step)>;

  GradientUplink(DesContext& context, std::vector<std::vector<Piece>> pieces, bool replies, AtServer at_server);

  // Before backward: unanswered pushes take the next send buffer, waiting while its sends are in flight.
  void start(int64_t worker, Next next);
  // The pieces of bucket b (during backward, with wfbp).
  void push_bucket(int64_t worker, size_t bucket);
  // After backward: the pieces not pushed yet.
  void push_rest(int64_t worker);
  // Answered pushes, after push_rest: "push, wait for reply" until every reply is back.
  void finish(int64_t worker, Next next);
  // A shard answers a piece (bytes of it) to the worker, with the version the reply carries; the shard's handler of
  // the worker is free once the reply has arrived. Unanswered pushes free it with DesContext::handled.
  void reply(const Piece& piece, int64_t worker, int64_t version);

  int64_t version(int64_t worker) const { return workers_[static_cast<size_t>(worker)].version; }
  // Unanswered pushes: the version of the parameters the worker now computes on (SSP: its last pull; ALADDIN: the
  // last server model it mixed in), which its next pushes carry.
  void set_version(int64_t worker, int64_t version) { workers_[static_cast<size_t>(worker)].version = version; }
  const std::vector<std::vector<Piece>>& pieces() const { return pieces_; }

 private:
  static constexpr int64_t kSendBuffers = 4;  // PushOptions::send_buffers
  struct Slot {
    int64_t in_flight = 0;
    Next waiter;
  };
  struct Worker {
    size_t next_bucket = 0;
    size_t slot = 0;
    std::vector<Slot> slots;
    int64_t replies_left = 0;
    Next finisher;
    int64_t version = 0;
  };
  void push_piece(int64_t worker, const Piece& piece);
  void maybe_finish(int64_t worker);

  DesContext& c_;
  std::vector<std::vector<Piece>> pieces_;
  bool replies_;
  AtServer at_server_;
  std::vector<Worker> workers_;
};

// Requests to every shard at once and their replies (PsClient::send_to_all, receive_from_all).
class ShardRequests {
 public:
  ShardRequests(DesContext& context, const ShardRanges& shards);

  const std::vector<double>& shard_bytes() const { return bytes_; }
  // Sends bytes[s] to every shard s at once; `at_server(s)` runs when shard s has it, `sent` (optional) when all have
  // arrived.
  void send_to_all(int64_t worker, const std::vector<double>& bytes, std::function<void(int64_t)> at_server,
                   Next sent = nullptr);
  // The worker now waits for one reply from every shard; `then` runs when the last has arrived.
  void expect_replies(int64_t worker, Next then);
  // Shard s answers with its slice (shard 0's version becomes the worker's, as PsWorker::receive does); its handler
  // of the worker is free once the reply has arrived.
  void reply(int64_t shard, int64_t worker, int64_t version);
  int64_t version(int64_t worker) const { return version_[static_cast<size_t>(worker)]; }

 private:
  struct Pending {
    int64_t left = 0;
    Next then;
  };
  DesContext& c_;
  std::vector<double> bytes_;
  std::vector<Pending> replies_;
  std::vector<int64_t> version_;
};

}  // namespace distsgd::sim
