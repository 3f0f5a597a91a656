#include "distsgd/comm/forked_main.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "distsgd/comm/child_process.hpp"
#include "distsgd/comm/launcher_notice.hpp"
#include "distsgd/comm/signal_pipe.hpp"

extern char** environ;

namespace distsgd::comm {
namespace {

ProgramMain registered_main = nullptr;
std::vector<int> descriptors_before_main;

std::vector<int> open_descriptors() {
  std::vector<int> fds;
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return fds;
  const int own = ::dirfd(dir);
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    const int fd = std::atoi(entry->d_name);
    if (fd != own) fds.push_back(fd);
  }
  ::closedir(dir);
  std::sort(fds.begin(), fds.end());
  return fds;
}

int thread_count() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  }
  return -1;
}

// The child's descriptors: 0-2, the notice descriptor, the release pipe and what the libraries opened before main.
void close_all_but(std::vector<int> keep) {
  std::sort(keep.begin(), keep.end());
  int next = 0;
  for (int fd : keep) {
    if (fd > next) ::close_range(static_cast<unsigned>(next), static_cast<unsigned>(fd - 1), 0);
    next = std::max(next, fd + 1);
  }
  ::close_range(static_cast<unsigned>(next), ~0U, 0);
}

}  // namespace

void register_program_main(ProgramMain main) {
  registered_main = main;
  // Only the libraries' own: a descriptor open at main with FD_CLOEXEC was opened by this program image (exec would
  // have closed an inherited one); one without it was inherited, and exec'd ranks do not keep those either.
  for (int fd : open_descriptors()) {
    const int flags = ::fcntl(fd, F_GETFD);
    if (fd > 2 && flags >= 0 && (flags & FD_CLOEXEC) != 0) descriptors_before_main.push_back(fd);
  }
}

ProgramMain program_main_for_fork() {
  if (!registered_main) return nullptr;
  const char* forced = std::getenv("DISTSGD_EXEC_CHILDREN");
  if (forced && std::string(forced) != "" && std::string(forced) != "0") return nullptr;
  return thread_count() == 1 ? registered_main : nullptr;
}

std::string encode_release(const std::vector<std::string>& environment_entries) {
  std::string message;
  for (const auto& entry : environment_entries) message += entry + '\0';
  message += '\0';
  return message;
}

void run_program_main_in_child(ProgramMain main, char** argv, std::vector<std::string> environment, int notice_fd,
                               int release_fd) {
  std::vector<int> keep = descriptors_before_main;
  for (int fd : {0, 1, 2, release_fd}) keep.push_back(fd);
  if (notice_fd >= 0) {
    // Usually kLauncherNoticeFd, as an exec'd child gets it; a descriptor the program held before main (a test
    // harness's pipe) keeps its number, and the notices take the first free one.
    int target = kLauncherNoticeFd;
    while (std::find(keep.begin(), keep.end(), target) != keep.end()) ++target;
    if (target != notice_fd) {
      ::dup2(notice_fd, target);  // both O_CLOEXEC-free now: no exec follows
      ::close(notice_fd);
    }
    keep.push_back(target);
    set_environment_entry(environment, std::string(kLauncherNoticeVariable) + "=" + std::to_string(target));
  }
  close_all_but(keep);
  // The launcher's signal pipe is its own: a launcher this child starts (a study's cell) makes its own.
  forget_signal_pipe_of_parent();

  std::string message;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(release_fd, buffer, sizeof buffer);
    if (n > 0) {
      message.append(buffer, static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  ::close(release_fd);
  if (message.size() < 1 || message.back() != '\0' || (message.size() > 1 && message[message.size() - 2] != '\0')) {
    ::_exit(1);  // the launcher gave up on the job before releasing it (and will say why)
  }
  for (std::size_t begin = 0; begin + 1 < message.size();) {
    const std::size_t end = message.find('\0', begin);
    set_environment_entry(environment, message.substr(begin, end - begin));
    begin = end + 1;
  }

  // Never freed: environ points into them until the process ends, static destructors and atexit handlers included.
  auto* child_environment = new std::vector<std::string>(std::move(environment));
  auto* child_environ = new std::vector<char*>;
  for (auto& entry : *child_environment) child_environ->push_back(entry.data());
  child_environ->push_back(nullptr);
  environ = child_environ->data();

  int argc = 0;
  while (argv[argc]) ++argc;
  const int status = main(argc, argv);
  // Out without static destructors: main has written and closed its files, and what is left to tear down is the
  // libraries' state, above all libtorch's operator registry, which deregisters every kernel. In a fork that writes
  // to pages still shared with the launcher, so each one is copied first: about 2 s of CPU per rank at the end of
  // every run (a 1-step run of 3 workers and a server took 3.7 s, 1.1 s of it training).
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ::_exit(status);
}

}  // namespace distsgd::comm
