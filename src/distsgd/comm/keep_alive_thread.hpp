// The thread that sends a process's keep-alives (a gossip endpoint's, a parameter-server client's). A peer's wait for
// this process's next message is bounded by the timeout, and the process's training thread may wait longer than that
// for reasons of its own (a straggler in an agreement, the leader's verdict on a lost peer, the survivors' new group
// after a loss, a long evaluation), so the keep-alives come from a thread that waits for nothing else. It runs its
// round every eighth of the timeout while anyone in the run trains (Communicator::nobody_trained_for_the_timeout):
// once nobody did, a training thread may be stuck, and the peers' bounded waits are what end such a run with an
// error rather than a hang.
#pragma once
#include "distsgd/core/runtime.hpp"

#include <exception>
#include <functional>
#include <mutex>

namespace distsgd::comm {

class Communicator;

class KeepAliveThread {
 public:
  KeepAliveThread() = default;
  ~KeepAliveThread() { stop(); }
  KeepAliveThread(const KeepAliveThread&) = delete;
  KeepAliveThread& operator=(const KeepAliveThread&) = delete;

  // Starts the thread: `round` sends whatever keep-alives are due. An exception from it ends the thread and goes
  // to `on_error`. Nothing in a virtual cluster, which bounds no wait by the timeout (and whose scheduler would take
  // a periodic actor for progress, hiding a deadlock from its report).
  void start(Communicator& comm, std::function<void()> round, std::function<void(const std::exception&)> on_error);
  // Returns once no round runs any more (at most one round of sends away); afterwards nothing is sent.
  void stop();

 private:
  std::mutex mutex_;
  runtime::Condition stop_requested_;
  bool stopping_ = false;  // under mutex_
  runtime::Thread thread_;
};

}  // namespace distsgd::comm
