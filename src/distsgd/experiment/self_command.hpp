// Running another `distsgd` command as a child process: study, validate and advise start training runs and commbench
// (they start ranks of their own) through their command lines, as a user would, so every run is an ordinary run
// directory. Profiles and predictions are made in this process from the same words (profile_in_process,
// simulate_in_process).
#pragma once
#include "distsgd/core/error.hpp"

#include <string>
#include <vector>

namespace distsgd::experiment {

// The user stopped the command (Ctrl-C, SIGTERM) while a child ran: the child was stopped too, and the caller stops
// rather than counting it as one failed step of many.
class Interrupted : public Error {
 public:
  using Error::Error;
};

// Runs this very program (/proc/self/exe, the same binary even when a rebuild has replaced the file) with `args`, stdin
// from /dev/null, stdout and stderr appended to `log_path` (its directory is created), and waits. Returns the exit
// status, or 128 + the signal that ended it.
int run_self(const std::vector<std::string>& args, const std::string& log_path);
// The same for another program (argv[0] its path, e.g. node for the report's SVG export).
int run_program(const std::vector<std::string>& argv, const std::string& log_path);

// The last `distsgd: error: ...` line of a log, or else its last non-empty line: the one-line reason a child failed.
std::string error_line_of(const std::string& log_path);

// "distsgd a b c": a command line for logs and reports (arguments with spaces quoted).
std::string command_text(const std::vector<std::string>& args);
// "a b c": the arguments alone, quoted as command_text quotes them ("" when there are none).
std::string arguments_text(const std::vector<std::string>& args);

}  // namespace distsgd::experiment
