// A step of validate's or advise's work (a training run, a profile, a fit) done once: the child command that made an
// output is recorded beside it, and the step is skipped when its output is complete and was made by the same command
// (so an interrupted grid resumes where it stopped, and a changed setting redoes what it affects).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace distsgd::experiment {

class ResumableStep {
 public:
  // `record_path`: the JSON that records the command; `log_path`: where the child's output goes.
  ResumableStep(std::string record_path, std::string log_path)
      : record_path_(std::move(record_path)), log_path_(std::move(log_path)) {}

  // Runs `distsgd args...` unless `output_complete` and the record holds these args. Returns true when it ran.
  // Throws Error "<what> failed: <the child's error line> (log: ...)" when the child fails.
  bool run(const std::vector<std::string>& args, bool output_complete, const std::string& what) const;
  // The same, with the step made in this process by `make` (which writes the output and the log) instead of a child;
  // `args` still name and record it. Throws Error "<what> failed: <its error> (log: ...)".
  bool run_in_process(const std::vector<std::string>& args, bool output_complete, const std::string& what,
                      const std::function<void()>& make) const;

  bool same_command(const std::vector<std::string>& args) const;
  // {"args", "command", "load_average_before" (1-minute load when it started: other jobs on the host), "seconds"}.
  nlohmann::json record() const;
  const std::string& log_path() const { return log_path_; }

 private:
  std::string record_path_, log_path_;
};

// The host's 1-minute load average (/proc/loadavg), -1 where unknown.
double load_average();

}  // namespace distsgd::experiment
