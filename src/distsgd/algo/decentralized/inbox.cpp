#include "distsgd/algo/decentralized/inbox.hpp"

#include "distsgd/core/error.hpp"

namespace distsgd::algo::decentralized {

void Inbox::put(PushMessage message) {
  std::lock_guard<std::mutex> lock(mutex_);
  messages_.push_back(std::move(message));
  ++received_;
  arrived_.notify_all();
}

std::vector<PushMessage> Inbox::take_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<PushMessage> taken;
  taken.swap(messages_);
  return taken;
}

int64_t Inbox::received() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return received_;
}

void Inbox::wait_for_received(int64_t count, std::chrono::milliseconds timeout, const std::function<void()>& check) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mutex_);
  while (received_ < count) {
    lock.unlock();
    check();
    lock.lock();
    require(std::chrono::steady_clock::now() < deadline,
            "gossip: waited " + std::to_string(timeout.count() / 1000) + " s for message " + std::to_string(count) +
                " (a peer is stuck or died; see --timeout)");
    arrived_.wait_for(lock, std::chrono::milliseconds(50), [&] { return received_ >= count; });
  }
}

}  // namespace distsgd::algo::decentralized
