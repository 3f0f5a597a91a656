#include "distsgd/experiment/resumable_step.hpp"

#include <filesystem>
#include <fstream>

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/core/timer.hpp"
#include "distsgd/experiment/run_directory.hpp"
#include "distsgd/experiment/self_command.hpp"

namespace distsgd::experiment {

double load_average() {
  std::ifstream in("/proc/loadavg");
  double one_minute = -1;
  in >> one_minute;
  return one_minute;
}

bool ResumableStep::same_command(const std::vector<std::string>& args) const {
  const auto recorded = read_json_file_if_valid(record_path_);
  return recorded && recorded->value("args", nlohmann::json()) == nlohmann::json(args);
}

nlohmann::json ResumableStep::record() const {
  return read_json_file_if_valid(record_path_).value_or(nlohmann::json::object());
}

bool ResumableStep::run(const std::vector<std::string>& args, bool output_complete, const std::string& what) const {
  return run_in_process(args, output_complete, what,
                        [&] { require(run_self(args, log_path_) == 0, error_line_of(log_path_)); });
}

bool ResumableStep::run_in_process(const std::vector<std::string>& args, bool output_complete, const std::string& what,
                                   const std::function<void()>& make) const {
  if (output_complete && same_command(args)) return false;
  std::error_code ignored;
  std::filesystem::remove(log_path_, ignored);  // the log of this attempt only
  const double load = load_average();
  const auto start = Clock::now();
  try {
    make();
  } catch (const Interrupted&) {
    throw;  // the user stopped it: not a failure of the step
  } catch (const Error& e) {
    throw Error(what + " failed: " + e.what() + " (log: " + log_path_ + ")");
  }
  write_json_atomically(record_path_, {{"args", args},
                                       {"command", command_text(args)},
                                       {"load_average_before", load},
                                       {"seconds", seconds_since(start)}});
  return true;
}

}  // namespace distsgd::experiment
