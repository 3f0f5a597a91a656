// The plots of `distsgd report`, as Vega-Lite specifications with their data inline (one self-contained JSON each):
// test accuracy against wall time and against epochs (per grid); throughput and speed-up against workers, one line
// per algorithm and one panel per network, the simulator's prediction beside the measurement; the time of an
// iteration split into data, forward, backward, exposed communication and update; throughput with and without a
// straggler; bytes sent per worker; parameter variance across workers. A plot without data is left out, and the
// report says why.
#pragma once
#include "distsgd/report/report_data.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace distsgd::report {

struct ReportChart {
  std::string name;     // a file name: plots/<name>.svg
  std::string title;    // its heading
  std::string caption;  // what it shows
  nlohmann::ordered_json spec;
};

struct ReportCharts {
  std::vector<ReportChart> charts;
  std::vector<std::string> omitted;  // "straggler robustness: no runs with and without --slowdown"
};

ReportCharts build_report_charts(const StudyData& data);

// The `arguments` of a run without its --slowdown (the configuration a straggler run is compared within), and the
// slowdown it had ("none" without one).
std::pair<std::string, std::string> without_slowdown(const std::string& arguments);

}  // namespace distsgd::report
