// The report's table of runs: one row per cell (run, status, test accuracy, samples/s, the simulator's samples/s
// and its ratio to the measurement, wall time, MB sent per worker, and why a cell failed), as aligned text for the
// terminal and as HTML for the page.
#pragma once
#include "distsgd/report/report_data.hpp"

#include <string>
#include <vector>

namespace distsgd::report {

struct ReportTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> status;  // of each row: done, failed, pending, simulated
};

// Every cell; `with_simulated` adds the worker counts that were only predicted.
ReportTable runs_table(const StudyData& data, bool with_simulated);

// Aligned columns (the reason of a failure on a line of its own below its row).
std::string table_text(const ReportTable& table);
// An HTML <table>; failed rows marked with class "failed".
std::string table_html(const ReportTable& table);

// Text with &, <, >, " escaped for HTML.
std::string html_escape(const std::string& text);

}  // namespace distsgd::report
