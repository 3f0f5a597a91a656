// Messages handed from receiving threads to the training thread, which never blocks on them unless it asks to:
// receiving threads put() messages (or fail() with an error); the training thread takes all that arrived, or
// waits, bounded by a timeout, until a number of them has arrived. An error recorded by a receiving thread is
// rethrown on the training thread at its next take_all() or wait. Used by the gossip family (pushed models) and
// ALADDIN's workers (global models pushed by the servers).
#pragma once
#include "distsgd/core/error.hpp"
#include "distsgd/core/runtime.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace distsgd::algo {

template <class Message>
class Mailbox {
 public:
  void put(Message message) {
    std::lock_guard<std::mutex> lock(mutex_);
    messages_.push_back(std::move(message));
    ++received_;
    arrived_.notify_all();
  }

  // From a receiving thread that cannot go on; the first error is kept.
  void fail(const std::string& error) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_.empty()) error_ = error;
    arrived_.notify_all();
  }

  // Everything that arrived since the last call, in arrival order; never blocks.
  std::vector<Message> take_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_.empty()) throw Error(error_);
    std::vector<Message> taken;
    taken.swap(messages_);
    return taken;
  }

  int64_t received() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return received_;
  }

  // Waits until `count` messages have arrived since the start; calls check() meanwhile (it throws when something
  // outside the mailbox failed) and throws Error after `timeout`.
  void wait_for_received(int64_t count, std::chrono::milliseconds timeout, const std::function<void()>& check) {
    const auto deadline = Clock::now() + timeout;
    std::unique_lock<std::mutex> lock(mutex_);
    while (received_ < count) {
      if (!error_.empty()) throw Error(error_);
      lock.unlock();
      check();
      lock.lock();
      require(Clock::now() < deadline, "waited " + std::to_string(timeout.count() / 1000) + " s for message " +
                                           std::to_string(count) + " (a peer is stuck or died; see --timeout)");
      arrived_.wait_for(
          lock, std::chrono::milliseconds(50), [&] { return received_ >= count || !error_.empty(); }, "a message");
    }
  }

 private:
  mutable std::mutex mutex_;
  runtime::Condition arrived_;
  std::vector<Message> messages_;
  int64_t received_ = 0;
  std::string error_;
};

}  // namespace distsgd::algo
