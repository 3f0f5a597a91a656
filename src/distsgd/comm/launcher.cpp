#include "distsgd/comm/launcher.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "distsgd/comm/child_process.hpp"
#include "distsgd/comm/launcher_notice.hpp"
#include "distsgd/comm/line_forwarder.hpp"
#include "distsgd/comm/signal_pipe.hpp"
#include "distsgd/core/error.hpp"

extern char** environ;

namespace distsgd::comm {
namespace {

using Clock = std::chrono::steady_clock;

// Child states are also checked on this timer, in case a SIGCHLD event was merged or dropped.
constexpr auto kPollInterval = std::chrono::milliseconds(200);
// After SIGKILL: how long children may take to be reaped before the launcher stops waiting for them.
constexpr auto kKilledExitTimeout = std::chrono::seconds(5);
// After the last child exited: how long output still in flight may take to arrive.
constexpr auto kFinalDrainTimeout = std::chrono::milliseconds(500);
constexpr std::size_t kReadChunkBytes = 64 * 1024;
// Keeps the deadline arithmetic far from overflow.
constexpr double kMaxGraceSeconds = 24 * 3600;

// The launcher's environment, then spec.env, then the rank variables: a later entry replaces an earlier one.
std::vector<std::string> child_environment(const LaunchSpec& spec, std::size_t rank,
                                           const std::vector<std::pair<std::string, std::string>>& after_start) {
  std::vector<std::string> environment;
  for (char** entry = environ; *entry; ++entry) environment.emplace_back(*entry);
  auto set = [&](const std::string& key, const std::string& value) {
    set_environment_entry(environment, key + "=" + value);
  };
  for (const auto& [key, value] : spec.env) set(key, value);
  for (const auto& [key, value] : after_start) set(key, value);
  const std::string world_size = std::to_string(spec.labels.size());
  set("RANK", std::to_string(rank));
  set("WORLD_SIZE", world_size);
  set("LOCAL_RANK", std::to_string(rank));
  set("LOCAL_WORLD_SIZE", world_size);
  set("DISTSGD_LAUNCHED", "1");
  set(kLauncherNoticeVariable, std::to_string(kLauncherNoticeFd));
  return environment;
}

// Signals the child's whole process group, or the child alone if it left its group.
void signal_tree(pid_t child, int signal) {
  if (::kill(-child, signal) != 0 && errno == ESRCH) ::kill(child, signal);
}

std::string describe_exit(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  const int signal = WTERMSIG(wait_status);
  const char* name = ::strsignal(signal);
  return "was killed by signal " + std::to_string(signal) + " (" + (name ? name : "unknown") + ")";
}

// A child that is distsgd itself ends with "distsgd: error: ..."; quoting that prefix twice says nothing.
std::string without_error_prefix(const std::string& line) {
  const std::string prefix = "distsgd: error: ";
  return line.compare(0, prefix.size(), prefix) == 0 ? line.substr(prefix.size()) : line;
}

struct Child {
  Child(const std::string& child_label, std::size_t child_rank, ChildProcess started)
      : label(child_label),
        rank(child_rank),
        process(std::move(started)),
        stdout_lines(STDOUT_FILENO, ""),
        stderr_lines(STDERR_FILENO, "[" + child_label + "] ") {}

  std::string label;
  std::size_t rank;
  ChildProcess process;
  LineForwarder stdout_lines;
  LineForwarder stderr_lines;
  std::string notices;  // what arrived of the notice pipe's current line
  bool running = true;
  bool killed_as_lost = false;  // the leader declared it lost, and the launcher killed it
};

enum class ReadMode { OneChunk, UntilEmpty };

// Reads what the pipe holds into its forwarder; at end of stream flushes the last partial line and closes the pipe.
void read_pipe(UniqueFd& pipe, LineForwarder& lines, ReadMode mode) {
  char buffer[kReadChunkBytes];
  while (pipe.valid()) {
    const ssize_t n = ::read(pipe.get(), buffer, sizeof buffer);
    if (n > 0) {
      lines.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
      if (mode == ReadMode::OneChunk) return;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return;
    } else {
      lines.finish();
      pipe.reset();
    }
  }
}

class Supervisor {
 public:
  explicit Supervisor(const LaunchSpec& spec) : spec_(spec), signals_({SIGINT, SIGTERM, SIGCHLD}, {SIGPIPE}) {}

  int run() {
    start_children();
    while (any_running()) {
      if (killed_ && Clock::now() >= give_up_time_) break;  // unkillable (e.g. stuck in the kernel): do not hang
      wait_for_events();
      handle_signals();
      for (auto& child : children_) reap(child);
      if (stopping_ && !killed_ && Clock::now() >= kill_time_) kill_all();
    }
    drain_remaining_output();
    return report();
  }

 private:
  void start_children() {
    const ProgramMain forked_main = spec_.may_fork ? program_main_for_fork() : nullptr;
    std::vector<std::pair<std::string, std::string>> after_start;
    try {
      if (!forked_main && spec_.environment_after_start) after_start = spec_.environment_after_start();
      for (std::size_t rank = 0; rank < spec_.labels.size(); ++rank) {
        const int network_namespace_fd =
            rank < spec_.network_namespace_fds.size() ? spec_.network_namespace_fds[rank] : -1;
        children_.emplace_back(spec_.labels[rank], rank,
                               start_child(spec_.argv, child_environment(spec_, rank, after_start),
                                           signals_.changed_signals(), network_namespace_fd,
                                           /*notice_pipe=*/true, forked_main));
      }
      if (forked_main) {
        if (spec_.environment_after_start) after_start = spec_.environment_after_start();
        std::vector<std::string> entries;
        for (const auto& [key, value] : after_start) entries.push_back(key + "=" + value);
        for (auto& child : children_) release_child(child.process, entries);
      }
    } catch (...) {
      kill_all();
      while (any_running() && Clock::now() < give_up_time_) {
        for (auto& child : children_) reap(child);
        ::poll(nullptr, 0, 10);
      }
      throw;
    }
  }

  bool any_running() const {
    return std::any_of(children_.begin(), children_.end(), [](const Child& c) { return c.running; });
  }

  // Sleeps until output, a signal, the poll timer or the kill deadline; forwards one chunk from each ready pipe.
  void wait_for_events() {
    std::vector<pollfd> fds{{signals_.fd(), POLLIN, 0}};
    std::vector<std::pair<UniqueFd*, LineForwarder*>> pipes;
    for (auto& child : children_) {
      for (auto [pipe, lines] : {std::pair{&child.process.stdout_pipe, &child.stdout_lines},
                                 std::pair{&child.process.stderr_pipe, &child.stderr_lines}}) {
        if (!pipe->valid()) continue;
        fds.push_back({pipe->get(), POLLIN, 0});
        pipes.emplace_back(pipe, lines);
      }
    }
    auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(kPollInterval);
    if (stopping_ && !killed_) {
      const auto until_kill = std::chrono::ceil<std::chrono::milliseconds>(kill_time_ - Clock::now());
      timeout = std::clamp(until_kill, std::chrono::milliseconds(0), timeout);
    }
    const std::size_t output_fds = fds.size();
    for (auto& child : children_) {
      if (child.process.notice_pipe.valid()) fds.push_back({child.process.notice_pipe.get(), POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), static_cast<int>(timeout.count())) <= 0) return;
    for (std::size_t i = 1; i < output_fds; ++i) {
      if (fds[i].revents != 0) read_pipe(*pipes[i - 1].first, *pipes[i - 1].second, ReadMode::OneChunk);
    }
    for (std::size_t i = output_fds; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      for (auto& child : children_) {
        if (child.process.notice_pipe.get() == fds[i].fd) read_notices(child);
      }
    }
  }

  // A rank's notices (comm/launcher_notice.hpp), a line at a time.
  void read_notices(Child& child) {
    char buffer[256];
    const ssize_t n = ::read(child.process.notice_pipe.get(), buffer, sizeof buffer);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
      child.process.notice_pipe.reset();
      return;
    }
    if (n < 0) return;
    child.notices.append(buffer, static_cast<std::size_t>(n));
    for (auto end = child.notices.find('\n'); end != std::string::npos; end = child.notices.find('\n')) {
      const std::string line = child.notices.substr(0, end);
      child.notices.erase(0, end + 1);
      if (const auto rank = lost_rank_of_notice(line)) kill_lost(*rank);
      if (line == kConnectedNotice) connected_ = true;
    }
    if (child.notices.size() > LineForwarder::kMaxLineBytes) child.notices.clear();  // not a notice of ours
  }

  // The leader declared `rank` lost: the others go on without it. If it is stopped or hangs it cannot end itself,
  // and the launcher would wait for it forever; killing it also closes its connections, so that peers still waiting
  // on it learn at once that it is gone, not a --timeout later.
  void kill_lost(int64_t rank) {
    if (rank < 0 || static_cast<std::size_t>(rank) >= children_.size()) return;
    Child& child = children_[static_cast<std::size_t>(rank)];
    if (!child.running || child.killed_as_lost) return;
    child.killed_as_lost = true;
    signal_tree(child.process.pid, SIGKILL);
  }

  void handle_signals() {
    for (const auto& event : signals_.take_events()) {
      if (event.signal == SIGCHLD) {
        // The child named by the signal is looked at first: the first to fail must be the one reported.
        for (auto& child : children_) {
          if (child.process.pid == event.sender) reap(child);
        }
      } else {
        interrupt(event.signal);
      }
    }
  }

  void interrupt(int signal) {
    if (stopping_) {  // a second Ctrl-C: no more grace
      if (!killed_) kill_all();
      return;
    }
    interrupt_signal_ = signal;
    interrupted_processes_ =
        std::count_if(children_.begin(), children_.end(), [](const Child& c) { return c.running; });
    stop_all();
  }

  void reap(Child& child) {
    if (!child.running) return;
    int status = 0;
    pid_t result;
    do {
      result = ::waitpid(child.process.pid, &status, WNOHANG);
    } while (result < 0 && errno == EINTR);
    if (result == 0) return;
    child.running = false;
    // Whatever it left behind in its group (its pid cannot be reused while the group has members) goes too.
    ::kill(-child.process.pid, SIGKILL);
    read_pipe(child.process.stdout_pipe, child.stdout_lines, ReadMode::UntilEmpty);
    read_pipe(child.process.stderr_pipe, child.stderr_lines, ReadMode::UntilEmpty);
    const bool succeeded = result > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (succeeded || stopping_) return;
    if (child.killed_as_lost) {
      write_fully(STDERR_FILENO, "distsgd: warning: " + child.label + " (rank " + std::to_string(child.rank) +
                                     ") was declared lost, so the launcher killed it (SIGKILL)\n");
      return;
    }
    const bool survivable = child.rank < spec_.survivable.size() && spec_.survivable[child.rank];
    // Before every process has connected the job cannot form without this one: the others would wait for it in
    // their connections until Gloo's own timeout, then fail without naming it.
    if (connected_ && survivable) {
      const std::string last_line = without_error_prefix(child.stderr_lines.last_line());
      write_fully(STDERR_FILENO, "distsgd: warning: " + child.label + " (rank " + std::to_string(child.rank) + ") " +
                                     (result > 0 ? describe_exit(status) : "ended") +
                                     (last_line.empty() ? "" : ": " + last_line) + "; the others go on without it\n");
      return;
    }
    first_failure_ =
        Failure{child.rank, (result > 0 ? describe_exit(status) : "ended with an unknown status (reaped elsewhere)") +
                                (survivable ? " before every process had connected" : "")};
    stop_all();
  }

  void stop_all() {
    stopping_ = true;
    const double grace_seconds = spec_.grace_seconds > 0 ? std::min(spec_.grace_seconds, kMaxGraceSeconds) : 0.0;
    kill_time_ =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace_seconds));
    for (auto& child : children_) {
      if (child.running) signal_tree(child.process.pid, SIGTERM);
    }
  }

  void kill_all() {
    stopping_ = killed_ = true;
    give_up_time_ = Clock::now() + kKilledExitTimeout;
    for (auto& child : children_) {
      if (child.running) signal_tree(child.process.pid, SIGKILL);
    }
  }

  // Every child is gone and its group killed: what is still in the pipes arrives promptly.
  void drain_remaining_output() {
    const auto deadline = Clock::now() + kFinalDrainTimeout;
    for (auto& child : children_) {
      for (auto [pipe, lines] : {std::pair{&child.process.stdout_pipe, &child.stdout_lines},
                                 std::pair{&child.process.stderr_pipe, &child.stderr_lines}}) {
        while (pipe->valid()) {
          read_pipe(*pipe, *lines, ReadMode::UntilEmpty);
          const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
          if (!pipe->valid() || left.count() <= 0) break;
          pollfd fd{pipe->get(), POLLIN, 0};
          ::poll(&fd, 1, static_cast<int>(left.count()));
        }
        if (pipe->valid()) {
          lines->finish();
          pipe->reset();
        }
      }
    }
  }

  int report() {
    const auto unreaped = std::count_if(children_.begin(), children_.end(), [](const Child& c) { return c.running; });
    if (unreaped > 0) {
      write_fully(STDERR_FILENO,
                  "distsgd: warning: " + std::to_string(unreaped) + " processes did not exit after SIGKILL\n");
    }
    if (first_failure_) {
      // Composed only now: a last line still in flight when the child was reaped has arrived by this point.
      const Child& child = children_[first_failure_->rank];
      const std::string last_line = without_error_prefix(child.stderr_lines.last_line());
      const std::string context = spec_.failure_context ? spec_.failure_context() : "";
      write_fully(STDERR_FILENO, "distsgd: error: " + child.label + " (rank " + std::to_string(child.rank) + ") " +
                                     first_failure_->how + (last_line.empty() ? "" : ": " + last_line) +
                                     (context.empty() ? "" : " (" + context + ")") + "\n");
      return 1;
    }
    if (interrupt_signal_ != 0) {
      write_fully(STDERR_FILENO, "distsgd: interrupted; stopped " + std::to_string(interrupted_processes_) +
                                     (interrupted_processes_ == 1 ? " process\n" : " processes\n"));
      return 128 + interrupt_signal_;
    }
    return 0;
  }

  const LaunchSpec& spec_;
  SignalPipe signals_;  // first: installed before any child starts, restored after every pipe is closed
  std::vector<Child> children_;
  bool stopping_ = false;  // SIGTERM sent; exits from now on are consequences, not causes
  bool killed_ = false;    // SIGKILL sent
  Clock::time_point kill_time_;
  bool connected_ = false;  // rank 0's "connected" notice arrived
  Clock::time_point give_up_time_ = Clock::now() + kKilledExitTimeout;
  struct Failure {
    std::size_t rank;
    std::string how;  // "exited with status 3", "was killed by signal 9 (Killed)"
  };
  std::optional<Failure> first_failure_;
  int interrupt_signal_ = 0;
  long interrupted_processes_ = 0;
};

}  // namespace

int launch_local(const LaunchSpec& spec) {
  require(!spec.argv.empty(), "launcher: no command to run");
  require(!spec.labels.empty(), "launcher: no processes to start");
  return Supervisor(spec).run();
}

}  // namespace distsgd::comm
