// Protocol: how models move between two workers, independent of who the peer is (topology) and how the values
// are combined (mixing). Three message kinds over the world group's point-to-point channels:
//   push      (header + payload, no reply; the sender does not wait for the receiver to merge it)
//   pull      (header; the peer replies with its model, served by a background thread)
//   exchange  (header + payload; the peer combines it and replies with its own model, AD-PSGD's pairwise step)
// Every worker runs one receiving thread per peer that may contact it; those threads keep serving until each of
// those peers has said it is done (finish()), so a worker that finished never blocks one still training.
// A header is float64[5] = {magic, protocol version, kind, step, weight} (gossip_header.hpp: checked on arrival);
// payloads and replies are float32[numel]. Each message kind travels on its own tag so the receiving thread, the
// requesting thread and async pushes never match each other's messages. Every wait is bounded by the communicator's
// timeout (Gloo's), and fails with the peer's rank.
// A lost peer (comm/liveness.hpp, --on-worker-loss continue): an operation with a peer that fails and that the
// leader then declares lost is dropped instead of failing (its receiving thread ends quietly, a push to it is
// lost, a pull or exchange brings no reply), and finish() neither tells it nor waits for it. A failure with a
// peer that is not declared lost stays an error.
#pragma once
#include "distsgd/algo/decentralized/gossip_header.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/comm/keep_alive_thread.hpp"
#include "distsgd/core/option.hpp"
#include "distsgd/core/runtime.hpp"

#include <ATen/core/Tensor.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace distsgd::algo::decentralized {

struct PushMessage {
  int64_t sender = -1;
  int64_t step = 0;
  double weight = 0;
  at::Tensor values;  // owned by the message
};

// What the receiving threads call. They run concurrently (one thread per peer): each must lock what it touches.
struct GossipHandlers {
  std::function<void(PushMessage)> on_push;
  std::function<at::Tensor(int64_t sender)> on_pull;  // the model to reply with (a copy)
  // Combine the peer's model with this one atomically and return this worker's model from just before (a copy).
  std::function<at::Tensor(int64_t sender, const at::Tensor& values)> on_exchange;
};

// Testing only (hidden): random sleeps up to this many ms before each gossip send and reply.
extern const StoredOption<double> kTestDelayMs;

struct EndpointOptions {
  int64_t numel = 0;               // model size
  std::vector<int64_t> contacts;   // ranks this worker may send to (it tells each of them when it is done)
  std::vector<int64_t> listeners;  // ranks that may send to this worker (one receiving thread each)
  double test_delay_ms = 0;        // testing: random sleep up to this long before each send and each reply
  uint64_t seed = 1;
  size_t max_pushes_in_flight = 8;  // beyond that, push() waits for the oldest to be delivered
};

// How old the models merged by workers were: for each merge, the merging worker's iteration less the iteration the
// other model came from, 0 when that one was ahead (the decentralized counterpart of a parameter server's staleness).
struct MessageAges {
  int64_t count = 0;
  double sum = 0;
  int64_t max = 0;
  void add(int64_t age);
  double mean() const { return count > 0 ? sum / static_cast<double>(count) : 0.0; }
};

// A request in flight (pull or exchange): wait() returns once the reply is in the tensor given at its start
// (true), or once the peer, which failed, was declared lost (false: no reply, the tensor's contents are undefined
// and a late write into it is possible: use another one next time).
class PendingReply {
 public:
  PendingReply();
  PendingReply(PendingReply&&) noexcept;
  PendingReply& operator=(PendingReply&&) noexcept;
  ~PendingReply();
  bool wait();

 private:
  friend class GossipEndpoint;
  // The request could not even start (Gloo refuses a peer whose connection closed): wait() decides as for a
  // failure in flight.
  void fail_now();
  std::vector<comm::Work> works_;
  int64_t peer_ = -1;
  const comm::Liveness* liveness_ = nullptr;  // null: every failure is an error
  bool lost_ = false;                         // the peer failed and was declared lost
  std::exception_ptr error_;                  // fail_now's, rethrown by wait() unless the peer is lost
};

// A receiving thread's wait for its peer's next message is bounded by the timeout, so from its creation to finish()
// an endpoint's keep-alive thread (comm/keep_alive_thread.hpp) sends every contact this worker sent nothing for a
// quarter of the timeout a header-only message that the receiver ignores: neither a worker that rarely sends to some
// contact (GoSGD with a small --gossip-prob) nor one whose training thread waits lets its peers' receives time out.
class GossipEndpoint {
 public:
  GossipEndpoint(comm::Communicator& comm, EndpointOptions options, GossipHandlers handlers);
  ~GossipEndpoint();
  GossipEndpoint(const GossipEndpoint&) = delete;
  GossipEndpoint& operator=(const GossipEndpoint&) = delete;

  // push/pull/exchange/finish are called from one thread (the worker's training or communication thread).
  // Sends (values, weight) to peer; values must not change afterwards (pass a copy). Does not wait.
  void push(int64_t peer, int64_t step, double weight, at::Tensor values);
  // Asks peer for its model; the reply lands in `into`.
  PendingReply pull(int64_t peer, int64_t step, at::Tensor into);
  // Sends `mine` (unchanged until the reply) to peer; its model from before the combination lands in `into`.
  PendingReply exchange(int64_t peer, int64_t step, at::Tensor mine, at::Tensor into);

  // Waits for this worker's pushes to be delivered, tells every contact it is done, and serves the others until
  // every listened peer said it is done. Afterwards no message to or from this worker is in flight.
  void finish();
  // Throws the first error of a receiving thread (a peer died or timed out), if any.
  void check() const;
  // Was `peer` declared lost (the run goes on without it)? Never waits.
  bool is_lost(int64_t peer) const;

  // This worker's current iteration, for the ages of the models it serves (pull, exchange).
  void set_step(int64_t step);
  // A merge the worker did itself (of a push), and its age in iterations.
  void record_age(int64_t age);
  // Ages of the pushes merged here (record_age), of this worker's models merged by pullers (the puller's iteration
  // less this worker's), and of both sides of each exchange served here.
  MessageAges ages() const;

  int64_t bytes_sent() const { return bytes_sent_->load(); }
  int64_t messages_sent() const { return messages_sent_.load(); }
  int64_t requests_served() const;

 private:
  struct Shared;
  struct InFlight {
    int64_t peer = -1;
    std::vector<comm::Work> works;
  };
  void keep_alive();  // one round of the keep-alive thread: a header to every contact due
  void send_header(int64_t peer, MessageKind kind, int64_t step, double weight, std::vector<comm::Work>& works);
  void delay();
  void sent_to(int64_t peer);
  // Waits for the oldest send in flight; a failure with a peer declared lost drops it.
  void deliver_oldest();
  size_t in_flight();  // sends not yet waited for
  PendingReply pending_from(int64_t peer);
  // How long after a receiving thread's failure check() waits for its peer to be declared lost.
  Clock::duration lost_verdict_wait() const;

  comm::Communicator& comm_;
  EndpointOptions options_;
  std::shared_ptr<Shared> shared_;  // also held by the receiving threads
  std::shared_ptr<std::atomic<int64_t>> bytes_sent_;
  std::atomic<int64_t> messages_sent_{0};
  bool finished_ = false;
  uint64_t delay_draws_ = 0;
  // The keep-alive thread, the training thread and AD-PSGD's communication thread send: they touch these under
  // the lock.
  std::mutex sending_mutex_;
  std::deque<InFlight> pushes_in_flight_;
  std::map<int64_t, Clock::time_point> last_sent_;
  comm::KeepAliveThread keep_alives_;  // last: it uses the members above
};

}  // namespace distsgd::algo::decentralized
