#include "distsgd/report/report_svg.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/experiment/self_command.hpp"

#include <filesystem>

namespace distsgd::report {

using experiment::error_line_of;
using experiment::run_program;
namespace fs = std::filesystem;

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
  fs::remove(log);  // the child's output is appended: this export's only
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
