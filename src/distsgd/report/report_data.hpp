// What `distsgd report` reads from a study directory: results.csv and curves.csv (experiment/study_results.hpp) and the
// name and description in study.json, with the groupings the plots need (a run's series, its network panel).
#pragma once
#include "distsgd/experiment/study_csv.hpp"

#include <optional>
#include <set>
#include <string>
#include <vector>

namespace distsgd::report {

struct StudyData {
  std::string dir;
  std::string name;
  std::string description;
  experiment::CsvTable results;
  experiment::CsvTable curves;      // empty when no run evaluated yet
  std::vector<std::string> axes;    // "workers", "variant": the axis.* columns, in order
  std::set<std::string> flag_axes;  // those that are train flags (study.json; the others are named axes)
  bool several_grids = false;

  // A row's number in `column`, or nothing when empty or not a number.
  std::optional<double> number(const experiment::CsvTable& table, size_t row, const std::string& column) const;
  // "grid: label" when the study has several grids, else the label.
  std::string run_name(const experiment::CsvTable& table, size_t row) const;
  // The labels of the row's axes but those in `leave_out` (short names: "workers", "net", "seed", "slowdown"),
  // joined: what one line of a plot stands for. The algorithm when no other axis is left.
  std::string series(const experiment::CsvTable& table, size_t row, const std::vector<std::string>& leave_out) const;
  // The row of results.csv of a cell (curves.csv names its rows' cells).
  std::optional<size_t> result_row(const std::string& cell) const;
  // The row's network: its --net, or "loopback".
  std::string network(const experiment::CsvTable& table, size_t row) const;
};

// Throws Error with one line when the directory holds no study results.
StudyData load_study_data(const std::string& dir);

}  // namespace distsgd::report
