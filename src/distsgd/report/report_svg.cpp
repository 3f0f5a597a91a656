#include "distsgd/report/report_svg.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/experiment/self_command.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

extern char** environ;

namespace distsgd::report {

using experiment::error_line_of;
namespace {

namespace fs = std::filesystem;

// Runs argv (argv[0] a path) with stdout and stderr to `log_path`; returns its exit status (or 128 + signal).
int run_program(const std::vector<std::string>& args, const std::string& log_path) {
  std::vector<std::string> words = args;
  std::vector<char*> argv;
  for (auto& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return 127;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 128;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

std::set<std::string> export_charts(const std::vector<ReportChart>& charts, const ReportAssets& assets,
                                    const std::string& study_dir, std::string& note) {
  const fs::path plots = fs::path(study_dir) / "plots";
  fs::create_directories(plots);
  // Plots of an earlier report that this one no longer draws go.
  for (const auto& entry : fs::directory_iterator(plots)) {
    const std::string file = entry.path().filename().string();
    if (file.size() > 4 && (file.substr(file.size() - 4) == ".svg" || file.find(".vl.json") != std::string::npos)) {
      fs::remove(entry.path());
    }
  }
  for (const auto& chart : charts) {
    write_json_atomically((plots / (chart.name + ".vl.json")).string(), nlohmann::json(chart.spec));
  }
  std::string node = find_program("node");
  if (node.empty()) node = find_program("nodejs");
  if (node.empty()) {
    note = "node is not installed (scripts/setup.sh installs it): no SVG files, the page is complete without them";
    return {};
  }
  const std::string log = (plots / "export_svg.log").string();
  const int status = run_program({node, (fs::path(assets.dir) / "export_svg.mjs").string(), plots.string()}, log);
  if (status != 0) {
    note = "the SVG export failed: " + error_line_of(log) + " (" + log + ")";
    return {};
  }
  std::set<std::string> exported;
  for (const auto& chart : charts) {
    if (fs::exists(plots / (chart.name + ".svg"))) exported.insert(chart.name);
  }
  return exported;
}

}  // namespace distsgd::report
