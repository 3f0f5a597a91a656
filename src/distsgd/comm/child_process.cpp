#include "distsgd/comm/child_process.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "distsgd/comm/launcher_notice.hpp"
#include "distsgd/core/error.hpp"

namespace distsgd::comm {
namespace {

struct Pipe {
  UniqueFd read_end;
  UniqueFd write_end;
};

Pipe make_pipe() {
  int ends[2];
  require(::pipe2(ends, O_CLOEXEC) == 0, std::string("launcher: cannot create a pipe: ") + std::strerror(errno));
  Pipe pipe{UniqueFd(ends[0]), UniqueFd(ends[1])};
  ::fcntl(pipe.read_end.get(), F_SETFL, ::fcntl(pipe.read_end.get(), F_GETFL) | O_NONBLOCK);
  return pipe;
}

std::vector<char*> null_terminated(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (const auto& s : strings) pointers.push_back(const_cast<char*>(s.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

void write_text(int fd, const char* text) {
  [[maybe_unused]] const ssize_t written = ::write(fd, text, std::strlen(text));
}

// Between fork and exec of a multithreaded parent only async-signal-safe calls are allowed: no allocation here.
[[noreturn]] void become_child(pid_t launcher, const char* path, char* const* argv, char* const* envp,
                               const std::vector<int>& signals_to_default, const sigset_t& launcher_mask, int stdin_fd,
                               int stdout_fd, int stderr_fd, int notice_fd, int network_namespace_fd,
                               const char* exec_failure_prefix, ProgramMain forked_main, int release_fd,
                               const std::vector<std::string>& environment) {
  ::setpgid(0, 0);
  // The launcher's death (even by SIGKILL) takes the child with it; if it already died, the orphan stops here.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != launcher) ::_exit(1);
  if (network_namespace_fd >= 0 && ::setns(network_namespace_fd, CLONE_NEWNET) != 0) {
    write_text(STDERR_FILENO, "cannot enter the emulated host's network namespace: ");
    write_text(STDERR_FILENO, strerrordesc_np(errno));
    write_text(STDERR_FILENO, "\n");
    ::_exit(126);
  }
  for (int signal : signals_to_default) ::signal(signal, SIG_DFL);
  ::sigprocmask(SIG_SETMASK, &launcher_mask, nullptr);
  ::dup2(stdin_fd, STDIN_FILENO);
  ::dup2(stdout_fd, STDOUT_FILENO);
  ::dup2(stderr_fd, STDERR_FILENO);
  // The parent was single-threaded, so anything may be called from here on.
  if (forked_main) run_program_main_in_child(forked_main, const_cast<char**>(argv), environment, notice_fd, release_fd);
  int first_to_close = 3;
  if (notice_fd >= 0) {
    // dup2 onto itself would keep O_CLOEXEC, and the descriptor would close at exec.
    if (notice_fd == kLauncherNoticeFd) ::fcntl(notice_fd, F_SETFD, 0);
    ::dup2(notice_fd, kLauncherNoticeFd);
    first_to_close = kLauncherNoticeFd + 1;
  }
  // Descriptors the host program opened without O_CLOEXEC (other children's pipes included) must not keep pipes open.
  ::close_range(static_cast<unsigned>(first_to_close), ~0U, 0);
  ::execve(path, argv, envp);
  const int error = errno;
  write_text(STDERR_FILENO, exec_failure_prefix);
  write_text(STDERR_FILENO, strerrordesc_np(error));  // strerror may translate (locks, allocation); this cannot
  write_text(STDERR_FILENO, "\n");
  ::_exit(127);
}

}  // namespace

ChildProcess start_child(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                         const std::vector<int>& signals_to_default, int network_namespace_fd, bool notice_pipe,
                         ProgramMain forked_main) {
  require(!argv.empty(), "launcher: no command to run");
  // Everything the child needs is prepared before fork.
  const std::vector<char*> argv_pointers = null_terminated(argv);
  const std::vector<char*> environment_pointers = null_terminated(environment);
  const std::string exec_failure_prefix = "cannot execute " + argv[0] + ": ";
  const pid_t launcher = ::getpid();
  UniqueFd dev_null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  require(dev_null.valid(), std::string("launcher: cannot open /dev/null: ") + std::strerror(errno));
  Pipe out = make_pipe();
  Pipe err = make_pipe();
  std::optional<Pipe> notice;
  if (notice_pipe) {
    notice = make_pipe();
    // The child's notices are best effort: a launcher that stopped reading must not block it.
    ::fcntl(notice->write_end.get(), F_SETFL, ::fcntl(notice->write_end.get(), F_GETFL) | O_NONBLOCK);
  }

  std::optional<Pipe> release;
  if (forked_main) {
    release = make_pipe();
    ::fcntl(release->read_end.get(), F_SETFL, ::fcntl(release->read_end.get(), F_GETFL) & ~O_NONBLOCK);
    std::fflush(nullptr);  // what the launcher's stdio still holds would be written twice
  }

  // Signals stay blocked across fork so that no handler of the launcher runs in the child before it resets them.
  sigset_t all, launcher_mask;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &launcher_mask);
  const pid_t pid = ::fork();
  if (pid == 0) {
    become_child(launcher, argv[0].c_str(), argv_pointers.data(), environment_pointers.data(), signals_to_default,
                 launcher_mask, dev_null.get(), out.write_end.get(), err.write_end.get(),
                 notice ? notice->write_end.get() : -1, network_namespace_fd, exec_failure_prefix.c_str(), forked_main,
                 release ? release->read_end.get() : -1, environment);
  }
  const int fork_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &launcher_mask, nullptr);
  require(pid > 0, std::string("launcher: cannot start a process: ") + std::strerror(fork_error));
  // Also from this side, so the group exists before the launcher may signal it (whichever runs first wins).
  ::setpgid(pid, pid);

  ChildProcess child;
  child.pid = pid;
  child.stdout_pipe = std::move(out.read_end);
  child.stderr_pipe = std::move(err.read_end);
  if (notice) child.notice_pipe = std::move(notice->read_end);
  if (release) child.release_pipe = std::move(release->write_end);
  return child;
}

void set_environment_entry(std::vector<std::string>& environment, const std::string& entry) {
  const std::string key_equals = entry.substr(0, entry.find('=') + 1);
  environment.erase(
      std::remove_if(environment.begin(), environment.end(),
                     [&](const std::string& e) { return e.compare(0, key_equals.size(), key_equals) == 0; }),
      environment.end());
  environment.push_back(entry);
}

void release_child(ChildProcess& child, const std::vector<std::string>& more_environment) {
  if (!child.release_pipe.valid()) return;
  const std::string message = encode_release(more_environment);
  std::size_t written = 0;
  while (written < message.size()) {
    const ssize_t n = ::write(child.release_pipe.get(), message.data() + written, message.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child died before its release: the launcher sees it exit
    written += static_cast<std::size_t>(n);
  }
  child.release_pipe.reset();
}

}  // namespace distsgd::comm
