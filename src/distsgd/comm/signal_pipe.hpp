// Turns signals into events a poll loop can read (the self-pipe trick), and puts the previous dispositions back when
// it goes out of scope, so a launcher inside a larger program (or a test) leaves no trace.
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <vector>

#include "distsgd/comm/unique_fd.hpp"

namespace distsgd::comm {

class SignalPipe {
 public:
  struct Event {
    int signal;
    pid_t sender;  // for SIGCHLD: the child whose state changed first (later ones may be merged into it)
  };

  // Catches `caught` (each becomes an Event) and ignores `ignored` until destruction. Only one SignalPipe may exist at
  // a time in a process: the handler reaches it through a global.
  SignalPipe(const std::vector<int>& caught, const std::vector<int>& ignored);
  ~SignalPipe();
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  // Readable while events are pending.
  int fd() const { return read_end_.get(); }
  // Every pending event, oldest first; never blocks.
  std::vector<Event> take_events();
  // Every signal whose disposition this object changed: a forked child resets them to SIG_DFL before exec.
  const std::vector<int>& changed_signals() const { return changed_; }

 private:
  UniqueFd read_end_;
  UniqueFd write_end_;
  std::vector<int> changed_;
  std::vector<struct sigaction> previous_;
};

// In a child forked without exec: the SignalPipe this process copied is the parent's, and a launcher the child starts
// must be able to make its own.
void forget_signal_pipe_of_parent();

}  // namespace distsgd::comm
