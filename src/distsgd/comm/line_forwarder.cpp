#include "distsgd/comm/line_forwarder.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace distsgd::comm {

void write_fully(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n >= 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 1000);
    } else if (errno != EINTR) {
      return;
    }
  }
}

void LineForwarder::feed(std::string_view bytes) {
  pending_.append(bytes);
  std::size_t start = 0;
  for (std::size_t newline; (newline = pending_.find('\n', start)) != std::string::npos; start = newline + 1) {
    emit(std::string_view(pending_).substr(start, newline - start));
  }
  pending_.erase(0, start);
  while (pending_.size() >= kMaxLineBytes) {
    emit(std::string_view(pending_).substr(0, kMaxLineBytes));
    pending_.erase(0, kMaxLineBytes);
  }
}

void LineForwarder::finish() {
  if (!pending_.empty()) emit(pending_);
  pending_.clear();
}

void LineForwarder::emit(std::string_view line) {
  std::string whole;
  whole.reserve(prefix_.size() + line.size() + 1);
  whole.append(prefix_).append(line).push_back('\n');
  write_fully(out_fd_, whole);
  if (!line.empty()) last_line_.assign(line);
}

}  // namespace distsgd::comm
