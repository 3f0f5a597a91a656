#include "distsgd/experiment/study_cell_process.hpp"

#include "distsgd/comm/child_process.hpp"
#include "distsgd/comm/signal_pipe.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/timer.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

extern char** environ;

namespace distsgd::experiment {
namespace {

constexpr double kGraceSeconds = 20;  // a launcher stops its processes within its own 3-s grace

// The running program through the magic link, not the path it names: a rebuild may replace the file while a long
// study runs, and every cell of one study must run the same program.
constexpr const char* kSelf = "/proc/self/exe";

// Appends what the pipe holds to the log; closes the pipe at its end.
void drain(comm::UniqueFd& pipe, std::ofstream& log) {
  char buffer[65536];
  while (pipe.valid()) {
    const ssize_t n = ::read(pipe.get(), buffer, sizeof buffer);
    if (n > 0) {
      log.write(buffer, n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    } else {
      pipe.reset();
    }
  }
  log.flush();
}

}  // namespace

CellProcessResult run_cell_process(const std::vector<std::string>& args, const std::string& log_path,
                                   double timeout_seconds, comm::SignalPipe& signals,
                                   const std::function<void()>& refresh) {
  std::vector<std::string> argv{kSelf};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_child_process(argv, log_path, timeout_seconds, signals, refresh);
}

CellProcessResult run_child_process(const std::vector<std::string>& argv, const std::string& log_path,
                                    double timeout_seconds, comm::SignalPipe& signals,
                                    const std::function<void()>& refresh) {
  std::filesystem::create_directories(std::filesystem::path(log_path).parent_path());
  std::ofstream log(log_path, std::ios::app);
  require(static_cast<bool>(log), "cannot write " + log_path);
  std::vector<std::string> environment;
  for (char** entry = environ; *entry; ++entry) environment.emplace_back(*entry);
  auto child = comm::start_child(argv, environment, signals.changed_signals());

  CellProcessResult result;
  const auto start = Clock::now();
  Clock::time_point kill_time = Clock::time_point::max();
  bool running = true, killed = false;
  const auto stop = [&](int signal) {
    ::kill(-child.pid, signal);
    if (kill_time == Clock::time_point::max()) {
      kill_time =
          Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kGraceSeconds));
    }
  };
  while (running) {
    std::vector<pollfd> fds{{signals.fd(), POLLIN, 0}};
    for (auto* pipe : {&child.stdout_pipe, &child.stderr_pipe}) {
      if (pipe->valid()) fds.push_back({pipe->get(), POLLIN, 0});
    }
    ::poll(fds.data(), fds.size(), 1000);
    drain(child.stdout_pipe, log);
    drain(child.stderr_pipe, log);
    for (const auto& event : signals.take_events()) {
      if (event.signal != SIGINT && event.signal != SIGTERM) continue;
      if (result.interrupted && !killed) {  // a second Ctrl-C: no more grace
        ::kill(-child.pid, SIGKILL);
        killed = true;
      }
      result.interrupted = true;
      stop(SIGINT);
    }
    if (timeout_seconds > 0 && !result.timed_out && seconds_since(start) > timeout_seconds) {
      result.timed_out = true;
      stop(SIGTERM);
    }
    if (!killed && Clock::now() >= kill_time) {
      ::kill(-child.pid, SIGKILL);
      killed = true;
    }
    int status = 0;
    pid_t reaped;
    do {
      reaped = ::waitpid(child.pid, &status, WNOHANG);
    } while (reaped < 0 && errno == EINTR);
    if (reaped == child.pid) {
      running = false;
      result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    } else if (reaped < 0) {
      running = false;
      result.exit_status = 128;
    }
    if (running && refresh) refresh();
  }
  // Whatever the run left in its group goes too; its last output is in the pipes.
  ::kill(-child.pid, SIGKILL);
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while ((child.stdout_pipe.valid() || child.stderr_pipe.valid()) && Clock::now() < deadline) {
    std::vector<pollfd> fds;
    for (auto* pipe : {&child.stdout_pipe, &child.stderr_pipe}) {
      if (pipe->valid()) fds.push_back({pipe->get(), POLLIN, 0});
    }
    ::poll(fds.data(), fds.size(), 100);
    drain(child.stdout_pipe, log);
    drain(child.stderr_pipe, log);
  }
  return result;
}

bool interrupt_pending(comm::SignalPipe& signals) {
  bool pending = false;
  for (const auto& event : signals.take_events()) pending |= event.signal == SIGINT || event.signal == SIGTERM;
  return pending;
}

}  // namespace distsgd::experiment
