// Pushed messages waiting to be merged: filled by the receiving threads, emptied by the training thread.
#pragma once
#include "distsgd/algo/decentralized/protocol.hpp"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

namespace distsgd::algo::decentralized {

class Inbox {
 public:
  void put(PushMessage message);
  std::vector<PushMessage> take_all();
  int64_t received() const;
  // Waits until `count` messages have arrived since the start; calls check() meanwhile (it throws when a
  // receiving thread failed) and throws distsgd::Error after `timeout`.
  void wait_for_received(int64_t count, std::chrono::milliseconds timeout, const std::function<void()>& check);

 private:
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::vector<PushMessage> messages_;
  int64_t received_ = 0;
};

}  // namespace distsgd::algo::decentralized
