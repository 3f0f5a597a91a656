// Turns one child's output stream into whole lines and writes each line, with an optional prefix, in one piece, so
// lines of concurrent children never interleave mid-line.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace distsgd::comm {

class LineForwarder {
 public:
  // A line longer than this is forwarded in pieces rather than buffered without bound.
  static constexpr std::size_t kMaxLineBytes = 64 * 1024;

  LineForwarder(int out_fd, std::string prefix) : out_fd_(out_fd), prefix_(std::move(prefix)) {}

  // Bytes read from the child; every line they complete is written.
  void feed(std::string_view bytes);
  // End of the stream: a final line without its newline is still written (with one).
  void finish();
  // The last non-empty line written, without prefix and newline ("" if none).
  const std::string& last_line() const { return last_line_; }

 private:
  void emit(std::string_view line);

  int out_fd_;
  std::string prefix_;
  std::string pending_;
  std::string last_line_;
};

// Writes all of bytes to fd, retrying on EINTR and waiting out EAGAIN; gives up silently on any other error (a closed
// stdout must not stop the training it reports on).
void write_fully(int fd, std::string_view bytes);

}  // namespace distsgd::comm
