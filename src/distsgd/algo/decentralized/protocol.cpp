#include "distsgd/algo/decentralized/protocol.hpp"

#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/log.hpp"
#include "distsgd/core/peer_topology.hpp"
#include "distsgd/core/runtime.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <utility>

namespace distsgd::algo::decentralized {

const StoredOption<double> kTestDelayMs{"--test-delay-ms", 0, "", non_negative<double>(),
                                        StoredOption<double>::kHidden};
namespace {

enum Tag : int64_t { kHeaderTag = 301, kPayloadTag = 302, kReplyTag = 303 };

constexpr int64_t kHeaderBytes = kGossipHeaderSize * 8;

void sleep_up_to(double max_ms, uint64_t draw) {
  if (max_ms <= 0) return;
  const double fraction = static_cast<double>(draw % 1000003) / 1000003.0;
  runtime::sleep_for(max_ms * fraction / 1000);
}

// After an operation with `peer` failed: true when the run goes on without it (it was declared lost, which the
// leader does within the silence limit of its death), false when the failure is an error.
bool went_on_without(const comm::Liveness* liveness, int64_t peer) {
  return liveness != nullptr && liveness->survivable(peer) && liveness->wait_until_lost(peer);
}

}  // namespace

struct GossipEndpoint::Shared {
  std::mutex mutex;
  std::string first_error;
  // Receiving threads whose peer failed and may be declared lost: when, and the error it is unless it is. The
  // training thread decides (check(), finish()): a receiving thread never touches the liveness, which a detached
  // one could outlive.
  struct PeerFailure {
    Clock::time_point when;
    std::string error;
  };
  std::map<int64_t, PeerFailure> peer_failures;
  int64_t served = 0;
  std::vector<runtime::Thread> threads;
  std::atomic<int64_t> step{0};  // the worker's iteration (set_step)
  MessageAges ages;              // under mutex
};

void MessageAges::add(int64_t age) {
  age = std::max<int64_t>(0, age);
  ++count;
  sum += static_cast<double>(age);
  max = std::max(max, age);
}

PendingReply::PendingReply() = default;
PendingReply::PendingReply(PendingReply&&) noexcept = default;
PendingReply& PendingReply::operator=(PendingReply&&) noexcept = default;
PendingReply::~PendingReply() {
  // Never leave a receive writing into a buffer that may be freed.
  try {
    wait();
  } catch (...) {
  }
}

bool PendingReply::wait() {
  if (lost_) return false;
  try {
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    for (auto& w : works_) w.wait();
  } catch (const std::exception&) {
    lost_ = went_on_without(liveness_, peer_);
    // The rest failed with the peer's connection; waiting for each would wait for another loss in vain.
    works_.clear();
    if (lost_) return false;
    throw;
  }
  works_.clear();
  return true;
}

void PendingReply::fail_now() { error_ = std::current_exception(); }

GossipEndpoint::GossipEndpoint(comm::Communicator& comm, EndpointOptions options, GossipHandlers handlers)
    : comm_(comm),
      options_(std::move(options)),
      shared_(std::make_shared<Shared>()),
      bytes_sent_(std::make_shared<std::atomic<int64_t>>(0)) {
  const auto handlers_ptr = std::make_shared<GossipHandlers>(std::move(handlers));
  for (int64_t peer : options_.listeners) {
    // The thread holds the shared state and the handlers, so both outlive it even if it must be detached.
    const bool survivable = comm.liveness() != nullptr && comm.liveness()->survivable(peer);
    shared_->threads.emplace_back(
        "receiver of rank " + std::to_string(peer),
        [&comm, peer, survivable, shared = shared_, handlers = handlers_ptr, bytes = bytes_sent_,
         numel = options_.numel, delay_ms = options_.test_delay_ms, seed = options_.seed] {
          uint64_t draws = 0;
          try {
            auto header = at::empty({kGossipHeaderSize}, at::kDouble);
            while (true) {
              comm.receive(header, peer, kHeaderTag).wait();
              const GossipHeader h = decode_gossip_header(header.data_ptr<double>(), peer);
              const MessageKind kind = h.kind;
              const int64_t step = h.step;
              const double weight = h.weight;
              if (kind == MessageKind::kDone) break;
              if (kind == MessageKind::kKeepAlive) continue;
              at::Tensor reply;
              if (kind == MessageKind::kPush) {
                auto values = at::empty({numel});
                comm.receive(values, peer, kPayloadTag).wait();
                handlers->on_push(PushMessage{peer, step, weight, values});
                continue;
              }
              if (kind == MessageKind::kPullRequest) {
                require(static_cast<bool>(handlers->on_pull),
                        "gossip: rank " + std::to_string(peer) + " pulled from a worker that serves no pulls");
                reply = handlers->on_pull(peer);
                std::lock_guard<std::mutex> lock(shared->mutex);
                shared->ages.add(step - shared->step.load());  // the puller merges this model
              } else if (kind == MessageKind::kExchange) {
                require(static_cast<bool>(handlers->on_exchange),
                        "gossip: rank " + std::to_string(peer) + " asked an exchange of a worker that serves none");
                auto values = at::empty({numel});
                comm.receive(values, peer, kPayloadTag).wait();
                reply = handlers->on_exchange(peer, values);
                // Both merge: this worker the peer's model, the peer this one's.
                const int64_t mine = shared->step.load();
                std::lock_guard<std::mutex> lock(shared->mutex);
                shared->ages.add(mine - step);
                shared->ages.add(step - mine);
              } else {
                throw Error("gossip: unexpected message kind " + std::to_string(static_cast<int64_t>(kind)) +
                            " from rank " + std::to_string(peer));
              }
              sleep_up_to(delay_ms, topology::mix_hash(seed + 7, static_cast<uint64_t>(peer), ++draws));
              comm.send(reply, peer, kReplyTag).wait();
              bytes->fetch_add(reply.numel() * 4);
              std::lock_guard<std::mutex> lock(shared->mutex);
              ++shared->served;
            }
          } catch (const std::exception& e) {
            const std::string error = "serving rank " + std::to_string(peer) + ": " + e.what();
            std::lock_guard<std::mutex> lock(shared->mutex);
            if (survivable) {
              // A peer declared lost sends no "done": this thread ends without it (decided by the training thread).
              shared->peer_failures[peer] = {Clock::now(), error};
            } else if (shared->first_error.empty()) {
              shared->first_error = error;
            }
          }
        });
  }
  const auto now = Clock::now();
  for (int64_t peer : options_.contacts) last_sent_[peer] = now;  // the receiving threads start with the endpoint
  keep_alives_.start(
      comm_, [this] { keep_alive(); },
      [shared = shared_](const std::exception& e) {
        std::lock_guard<std::mutex> lock(shared->mutex);
        if (shared->first_error.empty()) shared->first_error = std::string("keep-alive: ") + e.what();
      });
}

GossipEndpoint::~GossipEndpoint() {
  keep_alives_.stop();
  if (finished_) return;
  // Left early (an exception is unwinding): the receiving threads may be blocked on peers for up to the timeout.
  // They hold their own state; let them end on their own (the process is about to exit with the error).
  for (auto& t : shared_->threads) {
    if (t.joinable()) t.detach();
  }
}

void GossipEndpoint::check() const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  if (!shared_->first_error.empty()) throw Error("gossip: " + shared_->first_error);
  const auto now = Clock::now();
  for (const auto& [peer, failure] : shared_->peer_failures) {
    // Not declared lost well after the leader would have (the bound of Liveness::wait_until_lost): an error.
    if (!is_lost(peer) && now - failure.when > lost_verdict_wait()) throw Error("gossip: " + failure.error);
  }
}

Clock::duration GossipEndpoint::lost_verdict_wait() const {
  const auto* liveness = comm_.liveness();
  const double seconds = liveness != nullptr ? liveness->silence_seconds() + 3 : 0;
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

bool GossipEndpoint::is_lost(int64_t peer) const {
  const auto* liveness = comm_.liveness();
  return liveness != nullptr && liveness->is_lost(peer);
}

void GossipEndpoint::set_step(int64_t step) { shared_->step.store(step); }

void GossipEndpoint::record_age(int64_t age) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->ages.add(age);
}

MessageAges GossipEndpoint::ages() const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->ages;
}

int64_t GossipEndpoint::requests_served() const {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->served;
}

void GossipEndpoint::delay() {
  sleep_up_to(options_.test_delay_ms, topology::mix_hash(options_.seed, 0, ++delay_draws_));
}

void GossipEndpoint::send_header(int64_t peer, MessageKind kind, int64_t step, double weight,
                                 std::vector<comm::Work>& works) {
  auto header = at::empty({kGossipHeaderSize}, at::kDouble);
  encode_gossip_header({kind, step, weight}, header.data_ptr<double>());
  works.push_back(comm_.send(header, peer, kHeaderTag));
  bytes_sent_->fetch_add(kHeaderBytes);
  sent_to(peer);
}

void GossipEndpoint::sent_to(int64_t peer) {
  std::lock_guard<std::mutex> lock(sending_mutex_);
  last_sent_[peer] = Clock::now();
}

void GossipEndpoint::deliver_oldest() {
  InFlight oldest;
  {
    std::lock_guard<std::mutex> lock(sending_mutex_);
    if (pushes_in_flight_.empty()) return;
    oldest = std::move(pushes_in_flight_.front());
    pushes_in_flight_.pop_front();
  }
  if (is_lost(oldest.peer)) return;  // it failed with the peer's connection, or goes nowhere
  try {
    for (auto& w : oldest.works) w.wait();
  } catch (const std::exception&) {
    // Push-sum: the weight it carried is lost with the peer (the survivors' weights then sum to less than 1; the
    // evaluated average sum_i w_i z_i / sum_i w_i divides by what is left).
    if (!went_on_without(comm_.liveness(), oldest.peer)) throw;
  }
}

void GossipEndpoint::keep_alive() {
  std::vector<int64_t> due;
  {
    std::lock_guard<std::mutex> lock(sending_mutex_);
    const auto now = Clock::now();
    for (const auto& [peer, last] : last_sent_) {
      if (now - last >= comm_.timeout() / 4) due.push_back(peer);
    }
  }
  for (int64_t peer : due) {
    if (is_lost(peer)) continue;
    InFlight sending{peer, {}};
    try {
      send_header(peer, MessageKind::kKeepAlive, 0, 0, sending.works);
    } catch (const std::exception&) {
      if (!went_on_without(comm_.liveness(), peer)) throw;
      continue;
    }
    std::lock_guard<std::mutex> lock(sending_mutex_);
    pushes_in_flight_.push_back(std::move(sending));
  }
}

void GossipEndpoint::push(int64_t peer, int64_t step, double weight, at::Tensor values) {
  check();
  delay();
  InFlight sending{peer, {}};
  try {
    send_header(peer, MessageKind::kPush, step, weight, sending.works);
    sending.works.push_back(comm_.send(values, peer, kPayloadTag));
  } catch (const std::exception&) {
    // Gloo refuses at once to send to a peer whose connection closed. Its weight is lost (see deliver_oldest).
    if (!went_on_without(comm_.liveness(), peer)) throw;
    return;
  }
  bytes_sent_->fetch_add(values.numel() * 4);
  ++messages_sent_;
  {
    std::lock_guard<std::mutex> lock(sending_mutex_);
    pushes_in_flight_.push_back(std::move(sending));
  }
  // The peer's receiving thread takes every message as it comes, so waiting for the oldest is bounded.
  while (in_flight() > options_.max_pushes_in_flight) deliver_oldest();
}

PendingReply GossipEndpoint::pull(int64_t peer, int64_t step, at::Tensor into) {
  check();
  delay();
  PendingReply pending = pending_from(peer);
  try {
    // The reply's receive is posted first so the peer's reply never waits on this worker.
    pending.works_.push_back(comm_.receive(into, peer, kReplyTag));
    send_header(peer, MessageKind::kPullRequest, step, 0, pending.works_);
  } catch (const std::exception&) {
    pending.fail_now();
  }
  ++messages_sent_;
  return pending;
}

PendingReply GossipEndpoint::exchange(int64_t peer, int64_t step, at::Tensor mine, at::Tensor into) {
  check();
  delay();
  PendingReply pending = pending_from(peer);
  try {
    pending.works_.push_back(comm_.receive(into, peer, kReplyTag));
    send_header(peer, MessageKind::kExchange, step, 0, pending.works_);
    pending.works_.push_back(comm_.send(mine, peer, kPayloadTag));
  } catch (const std::exception&) {
    pending.fail_now();
  }
  bytes_sent_->fetch_add(mine.numel() * 4);
  ++messages_sent_;
  return pending;
}

PendingReply GossipEndpoint::pending_from(int64_t peer) {
  PendingReply pending;
  pending.peer_ = peer;
  pending.liveness_ = comm_.liveness();
  return pending;
}

size_t GossipEndpoint::in_flight() {
  std::lock_guard<std::mutex> lock(sending_mutex_);
  return pushes_in_flight_.size();
}

void GossipEndpoint::finish() {
  if (finished_) return;
  keep_alives_.stop();  // no keep-alive may follow the "done"
  while (in_flight() > 0) deliver_oldest();
  for (int64_t peer : options_.contacts) {
    if (is_lost(peer)) continue;
    try {
      std::vector<comm::Work> works;
      send_header(peer, MessageKind::kDone, 0, 0, works);
      for (auto& w : works) w.wait();
    } catch (const std::exception&) {
      if (!went_on_without(comm_.liveness(), peer)) throw;
    }
  }
  // Each receiving thread ends at its peer's "done", or at an error, which its receive's timeout bounds: a lost
  // peer's thread ends once its receive fails (at once when the peer's process died, its connections closed).
  for (auto& t : shared_->threads) t.join();
  finished_ = true;
  std::map<int64_t, Shared::PeerFailure> failures;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    failures = shared_->peer_failures;
  }
  for (const auto& [peer, failure] : failures) {
    if (!went_on_without(comm_.liveness(), peer)) throw Error("gossip: " + failure.error);
  }
  check();
}

}  // namespace distsgd::algo::decentralized
