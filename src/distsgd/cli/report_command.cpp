#include "distsgd/cli/report_command.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/report/report_assets.hpp"
#include "distsgd/report/report_charts.hpp"
#include "distsgd/report/report_data.hpp"
#include "distsgd/report/report_html.hpp"
#include "distsgd/report/report_svg.hpp"
#include "distsgd/report/report_tables.hpp"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>

namespace distsgd::cli {

using report::build_report_charts;
using report::export_charts;
using report::load_report_assets;
using report::load_study_data;
using report::report_html;
using report::ReportAssets;
using report::ReportCharts;
using report::ReportTable;
using report::runs_table;
using report::StudyData;
using report::table_text;

CLI::App* add_report_command(CLI::App& app, ReportCommand& c) {
  auto* cmd = app.add_subcommand("report",
                                 "write DIR/report.html from a study directory (distsgd study): tables and Vega-Lite "
                                 "plots in one self-contained page, and each plot as SVG under DIR/plots/");
  cmd->add_option("dir", c.dir, "the study directory (holding results.csv)")->required();
  cmd->add_option("--assets", c.assets, "the report/ folder of the source tree, holding node_modules (npm ci)");
  cmd->add_flag("!--no-svg", c.svg, "do not export the plots as SVG files (which needs node)");
  return cmd;
}

int run_report(const ReportCommand& c) {
  const StudyData data = load_study_data(c.dir);
  const ReportAssets assets = load_report_assets(c.assets);
  const ReportCharts charts = build_report_charts(data);
  std::string svg_note = c.svg ? "" : "not exported (--no-svg)";
  std::set<std::string> svg_files;
  if (c.svg) svg_files = export_charts(charts.charts, assets, c.dir, svg_note);
  const ReportTable page_table = runs_table(data, /*with_simulated=*/true);
  const std::string path = c.dir + "/report.html";
  {
    const std::string tmp = path + ".tmp";
    std::ofstream out(tmp);
    require(static_cast<bool>(out), "cannot write " + tmp);
    out << report_html({data, charts, page_table, assets, svg_files, svg_note});
    require(static_cast<bool>(out), "cannot write " + tmp + " (disk full?)");
    out.close();
    std::filesystem::rename(tmp, path);
  }
  std::cout << table_text(runs_table(data, /*with_simulated=*/false));
  std::cout << "\nreport: " << std::filesystem::absolute(path).string() << " (" << charts.charts.size() << " plots"
            << (svg_files.empty() ? "" : ", SVG files in " + c.dir + "/plots/") << ")" << std::endl;
  if (!svg_note.empty() && c.svg) std::cerr << "report: " << svg_note << std::endl;
  return 0;
}

}  // namespace distsgd::cli
