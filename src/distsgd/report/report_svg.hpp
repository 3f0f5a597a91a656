// Every plot of the report as files for papers: DIR/plots/<name>.vl.json (the Vega-Lite specification, data inline)
// and DIR/plots/<name>.svg, rendered by Vega's own SVG renderer under node (report/export_svg.mjs), headless.
#pragma once
#include "distsgd/report/report_assets.hpp"
#include "distsgd/report/report_charts.hpp"

#include <set>
#include <string>
#include <vector>

namespace distsgd::report {

// Returns the names whose SVG was written; `note` says why none was (node missing, the export failed).
std::set<std::string> export_charts(const std::vector<ReportChart>& charts, const ReportAssets& assets,
                                    const std::string& study_dir, std::string& note);

}  // namespace distsgd::report
