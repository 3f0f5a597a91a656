#include "distsgd/cli/self_command.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "distsgd/core/error.hpp"

extern char** environ;

namespace distsgd::cli {
namespace {

// Executed through the magic link rather than the path it names: a rebuild replaces the file at that path while a
// long grid runs, and every step of one grid must run the same program (the kernel keeps the running one's inode).
constexpr const char* kSelf = "/proc/self/exe";

// posix_spawn's file actions, released however the spawn ends.
class FileActions {
 public:
  FileActions() { posix_spawn_file_actions_init(&actions_); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  posix_spawn_file_actions_t* get() { return &actions_; }

 private:
  posix_spawn_file_actions_t actions_;
};

}  // namespace

int run_self(const std::vector<std::string>& args, const std::string& log_path) {
  const auto parent = std::filesystem::path(log_path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  const std::string program = kSelf;
  std::vector<std::string> argv_text{program};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);

  FileActions actions;
  posix_spawn_file_actions_addopen(actions.get(), STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(actions.get(), STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(actions.get(), STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, program.c_str(), actions.get(), nullptr, argv.data(), environ);
  require(spawned == 0, "cannot start " + program + ": " + std::strerror(spawned));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    require(errno == EINTR, std::string("waiting for ") + program + ": " + std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string error_line_of(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string line, error, last;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    last = line;
    const auto at = line.find("distsgd: error: ");
    if (at != std::string::npos) error = line.substr(at + std::strlen("distsgd: error: "));
  }
  return !error.empty() ? error : (!last.empty() ? last : "no output (see " + log_path + ")");
}

std::string self_help(const std::string& command) {
  std::random_device random;
  const auto path = std::filesystem::temp_directory_path() /
                    ("distsgd-help-" + std::to_string(::getpid()) + "-" + std::to_string(random()) + ".txt");
  const int status = run_self({command, "--help"}, path.string());
  std::ifstream in(path);
  const std::string help((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  return status == 0 ? help : "";
}

bool help_lists_flag(const std::string& help, const std::string& flag) {
  // Option names are listed as "  --flag" (or "-x,--flag"), followed by a space, "=" or the end of the line.
  for (std::size_t at = help.find(flag); at != std::string::npos; at = help.find(flag, at + 1)) {
    const char before = at > 0 ? help[at - 1] : ' ';
    const std::size_t end = at + flag.size();
    const char after = end < help.size() ? help[end] : '\n';
    if ((before == ' ' || before == ',') && (after == ' ' || after == '=' || after == '\n')) return true;
  }
  return false;
}

std::string arguments_text(const std::vector<std::string>& args) {
  std::string text;
  for (const auto& a : args) {
    const bool quote = a.empty() || a.find_first_of(" \t'\"") != std::string::npos;
    text += (text.empty() ? "" : " ") + (quote ? "'" + a + "'" : a);
  }
  return text;
}

std::string command_text(const std::vector<std::string>& args) {
  return args.empty() ? "distsgd" : "distsgd " + arguments_text(args);
}

}  // namespace distsgd::cli
