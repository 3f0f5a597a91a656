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

namespace {

// Whether a recorded argument is `now`'s: the same, or a path into the step's own directory (`home`, where the
// record lies) that was recorded under the directory's earlier place (a study directory moved or copied before it
// resumed: its outputs are where they were, relative to it).
bool same_argument(const std::string& recorded, const std::string& now, const std::filesystem::path& home) {
  if (recorded == now) return true;
  const std::filesystem::path was(recorded), is(now);
  return was.is_absolute() && is.is_absolute() && is.lexically_normal().parent_path() == home &&
         was.filename() == is.filename();
}

}  // namespace

bool ResumableStep::same_command(const std::vector<std::string>& args) const {
  const auto recorded = read_json_file_if_valid(record_path_);
  if (!recorded) return false;
  const auto was = recorded->value("args", nlohmann::json());
  if (!was.is_array() || was.size() != args.size()) return false;
  const auto home = std::filesystem::absolute(record_path_).lexically_normal().parent_path();
  for (size_t i = 0; i < args.size(); ++i) {
    if (!was[i].is_string() || !same_argument(was[i].get<std::string>(), args[i], home)) return false;
  }
  return true;
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
