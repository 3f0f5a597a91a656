#include "distsgd/algo/decentralized/protocol.hpp"

#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/log.hpp"
#include "distsgd/core/peer_topology.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace distsgd::algo::decentralized {

const StoredOption<double> kTestDelayMs{"--test-delay-ms", 0, "", non_negative<double>(),
                                        StoredOption<double>::kHidden};
namespace {

enum Tag : int64_t { kHeaderTag = 301, kPayloadTag = 302, kReplyTag = 303 };

constexpr int64_t kHeaderBytes = kGossipHeaderSize * 8;

void sleep_up_to(double max_ms, uint64_t draw) {
  if (max_ms <= 0) return;
  const double fraction = static_cast<double>(draw % 1000003) / 1000003.0;
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(max_ms * fraction));
}

}  // namespace

struct GossipEndpoint::Shared {
  std::mutex mutex;
  std::string first_error;
  int64_t served = 0;
  std::vector<std::thread> threads;
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

void PendingReply::wait() {
  for (auto& w : works_) w.wait();
  works_.clear();
}

GossipEndpoint::GossipEndpoint(comm::Communicator& comm, EndpointOptions options, GossipHandlers handlers)
    : comm_(comm),
      options_(std::move(options)),
      shared_(std::make_shared<Shared>()),
      bytes_sent_(std::make_shared<std::atomic<int64_t>>(0)) {
  const auto handlers_ptr = std::make_shared<GossipHandlers>(std::move(handlers));
  for (int64_t peer : options_.listeners) {
    // The thread holds the shared state and the handlers, so both outlive it even if it must be detached.
    shared_->threads.emplace_back([&comm, peer, shared = shared_, handlers = handlers_ptr, bytes = bytes_sent_,
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
        std::lock_guard<std::mutex> lock(shared->mutex);
        if (shared->first_error.empty()) {
          shared->first_error = "serving rank " + std::to_string(peer) + ": " + e.what();
        }
      }
    });
  }
}

GossipEndpoint::~GossipEndpoint() {
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

void GossipEndpoint::sent_to(int64_t peer) { last_sent_[peer] = std::chrono::steady_clock::now(); }

void GossipEndpoint::keep_alive() {
  const auto now = std::chrono::steady_clock::now();
  for (int64_t peer : options_.contacts) {
    auto it = last_sent_.find(peer);
    if (it == last_sent_.end()) {
      last_sent_[peer] = now;  // the receiving threads started with the endpoint
      continue;
    }
    if (now - it->second < comm_.timeout() / 4) continue;
    std::vector<comm::Work> works;
    send_header(peer, MessageKind::kKeepAlive, 0, 0, works);
    pushes_in_flight_.push_back(std::move(works));
  }
}

void GossipEndpoint::push(int64_t peer, int64_t step, double weight, at::Tensor values) {
  check();
  delay();
  std::vector<comm::Work> works;
  send_header(peer, MessageKind::kPush, step, weight, works);
  works.push_back(comm_.send(values, peer, kPayloadTag));
  bytes_sent_->fetch_add(values.numel() * 4);
  ++messages_sent_;
  pushes_in_flight_.push_back(std::move(works));
  // The peer's receiving thread takes every message as it comes, so waiting for the oldest is bounded.
  while (pushes_in_flight_.size() > options_.max_pushes_in_flight) {
    for (auto& w : pushes_in_flight_.front()) w.wait();
    pushes_in_flight_.pop_front();
  }
}

PendingReply GossipEndpoint::pull(int64_t peer, int64_t step, at::Tensor into) {
  check();
  delay();
  PendingReply pending;
  // The reply's receive is posted first so the peer's reply never waits on this worker.
  pending.works_.push_back(comm_.receive(into, peer, kReplyTag));
  send_header(peer, MessageKind::kPullRequest, step, 0, pending.works_);
  ++messages_sent_;
  return pending;
}

PendingReply GossipEndpoint::exchange(int64_t peer, int64_t step, at::Tensor mine, at::Tensor into) {
  check();
  delay();
  PendingReply pending;
  pending.works_.push_back(comm_.receive(into, peer, kReplyTag));
  send_header(peer, MessageKind::kExchange, step, 0, pending.works_);
  pending.works_.push_back(comm_.send(mine, peer, kPayloadTag));
  bytes_sent_->fetch_add(mine.numel() * 4);
  ++messages_sent_;
  return pending;
}

void GossipEndpoint::finish() {
  if (finished_) return;
  while (!pushes_in_flight_.empty()) {
    for (auto& w : pushes_in_flight_.front()) w.wait();
    pushes_in_flight_.pop_front();
  }
  for (int64_t peer : options_.contacts) {
    std::vector<comm::Work> works;
    send_header(peer, MessageKind::kDone, 0, 0, works);
    for (auto& w : works) w.wait();
  }
  // Each receiving thread ends at its peer's "done" (or at an error, which its receive's timeout bounds).
  for (auto& t : shared_->threads) t.join();
  finished_ = true;
  check();
}

}  // namespace distsgd::algo::decentralized
