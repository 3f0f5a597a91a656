#include "distsgd/comm/signal_pipe.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "distsgd/core/error.hpp"

namespace distsgd::comm {
namespace {

// The write end of the live SignalPipe, or -1; the handler may run on any thread.
std::atomic<int> event_write_fd{-1};

extern "C" void write_signal_event(int signal, siginfo_t* info, void*) {
  const int saved_errno = errno;
  const SignalPipe::Event event{signal, info ? info->si_pid : 0};
  const int fd = event_write_fd.load();
  // A full pipe drops the event: the loop also polls child states on a timer, and 8192 pending signals say enough.
  if (fd >= 0) {
    [[maybe_unused]] const ssize_t written = ::write(fd, &event, sizeof event);
  }
  errno = saved_errno;
}

}  // namespace

SignalPipe::SignalPipe(const std::vector<int>& caught, const std::vector<int>& ignored) {
  int ends[2];
  require(::pipe2(ends, O_CLOEXEC | O_NONBLOCK) == 0,
          std::string("launcher: cannot create a pipe: ") + std::strerror(errno));
  read_end_ = UniqueFd(ends[0]);
  write_end_ = UniqueFd(ends[1]);
  int expected = -1;
  require(event_write_fd.compare_exchange_strong(expected, write_end_.get()),
          "launcher: another launcher is already running in this process");

  auto install = [this](int signal, const struct sigaction& action) {
    struct sigaction previous {};
    ::sigaction(signal, &action, &previous);
    changed_.push_back(signal);
    previous_.push_back(previous);
  };
  struct sigaction catching {};
  catching.sa_sigaction = write_signal_event;
  catching.sa_flags = SA_SIGINFO | SA_RESTART | SA_NOCLDSTOP;
  sigemptyset(&catching.sa_mask);
  for (int signal : caught) install(signal, catching);
  struct sigaction ignoring {};
  ignoring.sa_handler = SIG_IGN;
  sigemptyset(&ignoring.sa_mask);
  for (int signal : ignored) install(signal, ignoring);
}

SignalPipe::~SignalPipe() {
  for (std::size_t i = changed_.size(); i-- > 0;) ::sigaction(changed_[i], &previous_[i], nullptr);
  event_write_fd.store(-1);
}

void forget_signal_pipe_of_parent() { event_write_fd.store(-1); }

std::vector<SignalPipe::Event> SignalPipe::take_events() {
  std::vector<Event> events;
  Event event;
  // Each event is written with one write() of a few bytes, so reads never split one.
  while (::read(read_end_.get(), &event, sizeof event) == static_cast<ssize_t>(sizeof event)) events.push_back(event);
  return events;
}

}  // namespace distsgd::comm
