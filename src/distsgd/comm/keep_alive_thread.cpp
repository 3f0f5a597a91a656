#include "distsgd/comm/keep_alive_thread.hpp"

#include "distsgd/comm/communicator.hpp"

#include <utility>

namespace distsgd::comm {

void KeepAliveThread::start(Communicator& comm, std::function<void()> round,
                            std::function<void(const std::exception&)> on_error) {
  if (runtime::executive() != nullptr) return;
  thread_ = runtime::Thread("keep-alives", [this, &comm, round = std::move(round), on_error = std::move(on_error)] {
    try {
      std::unique_lock<std::mutex> lock(mutex_);
      // A round every eighth of the timeout: what is due after a quarter of it goes out within 3/8 of it.
      while (!stop_requested_.wait_for(lock, comm.timeout() / 8, [this] { return stopping_; })) {
        if (comm.nobody_trained_for_the_timeout()) continue;
        lock.unlock();
        round();
        lock.lock();
      }
    } catch (const std::exception& e) {
      on_error(e);
    }
  });
}

void KeepAliveThread::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_requested_.notify_all();
  thread_.join();
}

}  // namespace distsgd::comm
