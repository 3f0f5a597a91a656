// `distsgd report DIR`: writes DIR/report.html from a study directory (distsgd study) and DIR/plots/ (each plot as
// SVG and as its Vega-Lite specification), and prints the page's path and the table of runs.
#pragma once
#include <string>

namespace CLI {
class App;
}

namespace distsgd::cli {

struct ReportCommand {
  std::string dir;
  std::string assets;  // the report/ folder holding node_modules (default: found, see report_assets.hpp)
  bool svg = true;
};

CLI::App* add_report_command(CLI::App& app, ReportCommand& command);
int run_report(const ReportCommand& command);

}  // namespace distsgd::cli
