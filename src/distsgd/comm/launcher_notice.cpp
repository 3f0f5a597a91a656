#include "distsgd/comm/launcher_notice.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

namespace distsgd::comm {

int launcher_notice_fd() {
  const char* value = std::getenv(kLauncherNoticeVariable);
  if (value == nullptr || std::getenv("DISTSGD_LAUNCHED") == nullptr) return -1;
  const int fd = std::atoi(value);
  // A variable inherited by a process the launcher did not start may name any descriptor: only a pipe is ours.
  struct stat status {};
  if (fd < 0 || ::fstat(fd, &status) != 0 || !S_ISFIFO(status.st_mode)) return -1;
  return fd;
}

namespace {

void write_notice(int fd, const std::string& line) {
  if (fd < 0) return;
  // Shorter than PIPE_BUF: written whole or not at all. A full pipe (a launcher that stopped reading) loses it.
  ssize_t written;
  do {
    written = ::write(fd, line.data(), line.size());
  } while (written < 0 && errno == EINTR);
}

}  // namespace

void tell_launcher_lost(int fd, int64_t rank) { write_notice(fd, "lost " + std::to_string(rank) + "\n"); }

void tell_launcher_connected(int fd) { write_notice(fd, std::string(kConnectedNotice) + "\n"); }

std::optional<int64_t> lost_rank_of_notice(const std::string& line) {
  const std::string prefix = "lost ";
  if (line.compare(0, prefix.size(), prefix) != 0 || line.size() == prefix.size()) return std::nullopt;
  int64_t rank = 0;
  for (size_t i = prefix.size(); i < line.size(); ++i) {
    if (line[i] < '0' || line[i] > '9' || rank > (int64_t{1} << 40)) return std::nullopt;
    rank = rank * 10 + (line[i] - '0');
  }
  return rank;
}

}  // namespace distsgd::comm
