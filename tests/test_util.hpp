// Helpers shared by the tests: temporary directories and running the distsgd binary.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "distsgd/core/error.hpp"

namespace distsgd::testing {

// Whether Debian's dataset-fashion-mnist is installed (the runs on real data skip, saying so, where it is not).
inline bool have_fashion_mnist() {
  return std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
}

// The timing of the tests that train lenet5 on the virtual cluster (the accuracy acceptance runs, and the checks of
// an algorithm's math or figures that need no sockets): lenet5 measured on one core of this project's machine, on a
// fast network (tests/acceptance_test.cpp says why).
inline const std::string kVirtualLenet5Timing =
    " --virtual --profile " DISTSGD_SOURCE_DIR "/tests/fixtures/lenet5-one-core.json --cluster 100gb-ib";

// A fresh directory under the system temp dir, removed when the object goes out of scope.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() / ("distsgd-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command and captures its output (redirect stderr into it with 2>&1 where wanted).
inline CommandResult run_shell(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// Runs `distsgd <args>` through the shell and captures its output.
inline CommandResult run_distsgd(const std::string& args) {
  return run_shell(std::string(DISTSGD_BINARY) + " " + args + " 2>&1");
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A run directory's summary.json.
inline nlohmann::json summary_of(const std::string& run_dir) {
  return nlohmann::json::parse(read_file(run_dir + "/summary.json"));
}

// How many times `part` occurs in `text` (overlapping occurrences counted).
inline int count_of(const std::string& text, const std::string& part) {
  int count = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

// The message of the distsgd::Error that `f` throws, or "" when it throws none.
inline std::string error_of_call(const std::function<void()>& f) {
  try {
    f();
  } catch (const distsgd::Error& e) {
    return e.what();
  }
  return "";
}

// A TCP port no socket on this host is bound to now, as the kernel picks one, for a test's rendezvous (MASTER_PORT).
// A random port in 20000..39999 could be one in use (that range overlaps the kernel's own for outgoing
// connections), so the test failed by chance.
inline int free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  if (fd >= 0) ::close(fd);
  if (!ok) throw std::runtime_error("free_tcp_port: cannot bind a socket to 127.0.0.1");
  return ntohs(address.sin_port);
}

}  // namespace distsgd::testing
