// What listens where (issue 14, item 5; README "What listens where"): a single-host `distsgd train --workers 2`
// run's listening sockets, in the launcher (the rendezvous store) and its workers (Gloo), are on loopback only.
// The test watches every process of the run through /proc while it trains and fails on any listening socket bound
// elsewhere (0.0.0.0, [::], a real interface).
#include "test_util.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;

// The pids of `root` and all its descendants (from each process's parent in /proc/PID/stat).
std::vector<pid_t> process_tree(pid_t root) {
  std::map<pid_t, pid_t> parent;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto close = line.rfind(')');  // the command name may hold spaces
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    parent[std::stoi(name)] = ppid;
  }
  std::vector<pid_t> tree{root};
  for (size_t i = 0; i < tree.size(); ++i) {
    for (const auto& [pid, ppid] : parent) {
      if (ppid == tree[i]) tree.push_back(pid);
    }
  }
  return tree;
}

// /proc/net/tcp{,6} write an address as 32-bit words in host (little-endian) order: 127.0.0.1 is 0100007F.
bool is_loopback(const std::string& hex_address) {
  const auto loopback_v4 = [](const std::string& word) { return word.size() == 8 && word.substr(6) == "7F"; };
  if (hex_address.size() == 8) return loopback_v4(hex_address);
  if (hex_address == "00000000000000000000000001000000") return true;  // ::1
  return hex_address.size() == 32 && hex_address.substr(0, 24) == "0000000000000000FFFF0000" &&
         loopback_v4(hex_address.substr(24));  // ::ffff:127.x.y.z
}

// "ADDRESS:PORT" of every listening socket `pid` holds.
std::vector<std::string> listening_sockets(pid_t pid) {
  std::set<std::string> inodes;
  std::error_code ec;
  const fs::path fds = "/proc/" + std::to_string(pid) + "/fd";
  for (const auto& fd : fs::directory_iterator(fds, ec)) {
    const std::string target = fs::read_symlink(fd.path(), ec).string();
    if (!ec && target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::vector<std::string> found;
  for (const char* table : {"tcp", "tcp6"}) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/net/" + table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
      if (state == "0A" && inodes.count(inode)) found.push_back(local);  // 0A: LISTEN
    }
  }
  return found;
}

}  // namespace

TEST(Exposure, SingleHostRunListensOnLoopbackOnly) {
  distsgd::testing::TempDir dir;
  const std::string out = dir / "run";
  std::vector<std::string> args = {
      DISTSGD_BINARY,           "train", "--workers", "2", "--model",   "lenet5", "--dataset", "synthetic",
      "--synthetic-train-size", "6400",  "--epochs",  "1", "--threads", "1",      "--out",     out};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, (dir / "stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t launcher = 0;
  ASSERT_EQ(posix_spawn(&launcher, argv[0], &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);

  // Polled every few milliseconds, so the short-lived listeners of Gloo's connection set-up are seen too.
  std::set<std::string> seen, exposed;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (waitpid(launcher, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(launcher, SIGTERM);
      waitpid(launcher, &status, 0);
      FAIL() << "the run did not end within 120 s";
    }
    for (pid_t pid : process_tree(launcher)) {
      for (const std::string& socket : listening_sockets(pid)) {
        seen.insert(socket);
        if (!is_loopback(socket.substr(0, socket.find(':')))) exposed.insert(socket);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << distsgd::testing::read_file(dir / "stderr");
  EXPECT_FALSE(seen.empty()) << "no listening socket seen: the rendezvous store's must be";
  std::string list;
  for (const auto& s : exposed) list += " " + s;
  EXPECT_TRUE(exposed.empty()) << "listening beyond loopback (hex address:port as in /proc/net/tcp):" << list;
}

// The check itself tells the wildcard from loopback.
TEST(Exposure, LoopbackTestOfProcNetAddresses) {
  EXPECT_TRUE(is_loopback("0100007F"));
  EXPECT_TRUE(is_loopback("0000000000000000FFFF00000100007F"));
  EXPECT_TRUE(is_loopback("00000000000000000000000001000000"));
  EXPECT_FALSE(is_loopback("00000000"));                          // 0.0.0.0
  EXPECT_FALSE(is_loopback("00000000000000000000000000000000"));  // [::]
  EXPECT_FALSE(is_loopback("0100580A"));                          // 10.88.0.1
}
