#include "distsgd/experiment/self_command.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "distsgd/comm/signal_pipe.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/experiment/study_cell_process.hpp"

namespace distsgd::experiment {

int run_self(const std::vector<std::string>& args, const std::string& log_path) {
  // As a study runs its cells: the child dies with this process (PR_SET_PDEATHSIG, even on SIGKILL), and Ctrl-C or
  // SIGTERM stops it (its whole process group: a train launcher and its ranks) before this process gives up.
  comm::SignalPipe signals({SIGINT, SIGTERM, SIGCHLD}, {SIGPIPE});
  const auto result = run_cell_process(args, log_path, 0, signals, nullptr);
  if (result.interrupted)
    throw Interrupted("interrupted: stopped " + command_text(args) + " (its log: " + log_path + ")");
  return result.exit_status;
}

int run_program(const std::vector<std::string>& argv, const std::string& log_path) {
  comm::SignalPipe signals({SIGINT, SIGTERM, SIGCHLD}, {SIGPIPE});
  const auto result = run_child_process(argv, log_path, 0, signals, nullptr);
  if (result.interrupted) throw Interrupted("interrupted: stopped " + argv.at(0) + " (its log: " + log_path + ")");
  return result.exit_status;
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

}  // namespace distsgd::experiment
