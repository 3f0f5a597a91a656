// report.html: one self-contained page (the Vega libraries and every plot's data inline; nothing fetched, so it
// opens offline): the study's name and description, the table of runs, each plot with what it shows and links to
// its SVG and Vega-Lite files, and the plots left out with the reason.
#pragma once
#include "distsgd/report/report_assets.hpp"
#include "distsgd/report/report_charts.hpp"
#include "distsgd/report/report_data.hpp"
#include "distsgd/report/report_tables.hpp"

#include <set>
#include <string>

namespace distsgd::report {

struct ReportPage {
  const StudyData& data;
  const ReportCharts& charts;
  const ReportTable& runs;
  const ReportAssets& assets;
  const std::set<std::string>& svg_files;  // charts with plots/<name>.svg
  std::string svg_note;                    // why there are none
};

std::string report_html(const ReportPage& page);

// Text for a <script> element: "</script" can end the element early wherever it appears, so it is written
// "<\/script" (the same text to JavaScript and JSON, where it can only stand inside a string).
std::string script_safe(const std::string& code);

}  // namespace distsgd::report
