#include "distsgd/cluster/network_namespace.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <fstream>
#include <thread>

#include "distsgd/core/error.hpp"

namespace distsgd::cluster {
namespace {

std::string system_error(const std::string& what) { return what + ": " + std::strerror(errno); }

// Runs `work` on a new thread and waits: namespace changes of a thread (setns, unshare of CLONE_NEWNET) stay with it.
void on_own_thread(const std::function<void()>& work) {
  std::exception_ptr failure;
  std::thread thread([&] {
    try {
      work();
    } catch (...) {
      failure = std::current_exception();
    }
  });
  thread.join();
  if (failure) std::rethrow_exception(failure);
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream file(path);
  file << text;
  file.flush();
  return static_cast<bool>(file);
}

}  // namespace

NetworkNamespace NetworkNamespace::create() {
  int fd = -1;
  on_own_thread([&] {
    require(::unshare(CLONE_NEWNET) == 0, system_error("cannot create a network namespace (unshare)"));
    fd = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
    require(fd >= 0, system_error("cannot open the new network namespace"));
  });
  return NetworkNamespace(fd);
}

NetworkNamespace::NetworkNamespace(NetworkNamespace&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

NetworkNamespace& NetworkNamespace::operator=(NetworkNamespace&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

NetworkNamespace::~NetworkNamespace() {
  if (fd_ >= 0) ::close(fd_);
}

void NetworkNamespace::run_inside(const std::function<void()>& work) const {
  on_own_thread([&] {
    require(::setns(fd_, CLONE_NEWNET) == 0, system_error("cannot enter a network namespace (setns)"));
    work();
  });
}

void NetworkNamespace::run_command_inside(const std::vector<std::string>& argv) const {
  require(!argv.empty(), "no command to run");
  int err[2];
  require(::pipe2(err, O_CLOEXEC) == 0, system_error("cannot create a pipe"));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {  // only async-signal-safe calls from here on
    ::dup2(err[1], STDERR_FILENO);
    ::dup2(err[1], STDOUT_FILENO);
    if (::setns(fd_, CLONE_NEWNET) != 0) ::_exit(126);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(err[1]);
  std::string output;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(err[0], buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) output.append(buffer, static_cast<size_t>(n));
  }
  ::close(err[0]);
  require(pid > 0, system_error("cannot start " + argv[0]));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string command;
  for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) throw Error("cannot run " + argv[0] + ": not installed?");
  while (!output.empty() && output.back() == '\n') output.pop_back();
  require(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "'" + command + "' failed" + (output.empty() ? "" : ": " + output));
}

bool has_network_admin() {
  // Capability 12 (CAP_NET_ADMIN) in the effective set, read without libcap.
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) return (std::stoull(line.substr(7), nullptr, 16) >> 12) & 1;
  }
  return false;
}

std::string acquire_network_privileges() {
  if (has_network_admin()) return "";
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) {
    return std::string(
               "the emulated cluster needs CAP_NET_ADMIN: not root, and an unprivileged user namespace "
               "could not be made (") +
           std::strerror(errno) + (errno == EINVAL ? ", the process already runs threads" : "") +
           "); run as root or allow user namespaces (sysctl user.max_user_namespaces, "
           "kernel.apparmor_restrict_unprivileged_userns)";
  }
  // Root inside, ourselves outside: the one mapping an unprivileged process may write.
  if (!write_file("/proc/self/setgroups", "deny") ||
      !write_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
      !write_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1")) {
    return "the emulated cluster needs CAP_NET_ADMIN: a user namespace was made but its uid/gid map could not be "
           "written";
  }
  return has_network_admin() ? "" : "the emulated cluster needs CAP_NET_ADMIN, which the new user namespace lacks";
}

}  // namespace distsgd::cluster
