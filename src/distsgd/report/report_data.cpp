#include "distsgd/report/report_data.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/experiment/run_directory.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

namespace distsgd::report {

using experiment::CsvTable;
using experiment::read_csv;

std::optional<double> StudyData::number(const CsvTable& table, size_t row, const std::string& column) const {
  const std::string& text = table.at(row, column);
  if (text.empty()) return std::nullopt;
  try {
    size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::string StudyData::run_name(const CsvTable& table, size_t row) const {
  const std::string& grid = table.at(row, "grid");
  return several_grids && !grid.empty() ? grid + ": " + table.at(row, "label") : table.at(row, "label");
}

std::string StudyData::series(const CsvTable& table, size_t row, const std::vector<std::string>& leave_out) const {
  std::vector<std::string> parts;
  for (const auto& axis : axes) {
    if (std::find(leave_out.begin(), leave_out.end(), axis) != leave_out.end()) continue;
    const std::string& label = table.at(row, "axis." + axis);
    if (label.empty()) continue;
    // A flag's value needs the flag's name ("servers=4"); a named axis's labels carry their own words ("ssp s=3").
    parts.push_back(flag_axes.count(axis) ? axis + "=" + label : label);
  }
  if (parts.empty()) return table.has_column("algorithm") ? table.at(row, "algorithm") : table.at(row, "label");
  return join(parts, ", ");
}

std::optional<size_t> StudyData::result_row(const std::string& cell) const {
  for (size_t r = 0; r < results.rows.size(); ++r) {
    if (results.at(r, "cell") == cell) return r;
  }
  return std::nullopt;
}

std::string StudyData::network(const CsvTable& table, size_t row) const {
  const std::string& net = table.at(row, "net");
  return net.empty() ? "loopback" : net;
}

StudyData load_study_data(const std::string& dir) {
  namespace fs = std::filesystem;
  require(fs::is_directory(dir), "distsgd report: " + dir + " is not a directory (give a study directory)");
  const std::string results = dir + "/results.csv";
  require(fs::exists(results),
          "distsgd report: " + dir + " has no results.csv (run `distsgd study SPEC.json --out " + dir + "` first)");
  StudyData data;
  data.dir = dir;
  data.results = read_csv(results);
  for (const char* column : {"cell", "grid", "label", "status"}) {
    require(data.results.has_column(column), results + ": no column '" + column + "' (not written by distsgd study)");
  }
  const auto finished = std::count_if(data.results.rows.begin(), data.results.rows.end(), [&](const auto& row) {
    const std::string& status = row[static_cast<size_t>(
        std::find(data.results.columns.begin(), data.results.columns.end(), "status") - data.results.columns.begin())];
    return status != "pending";
  });
  require(finished > 0, "distsgd report: " + results + " has no finished cell yet (" +
                            std::to_string(data.results.rows.size()) + " pending; run the study first)");
  if (fs::exists(dir + "/curves.csv")) data.curves = read_csv(dir + "/curves.csv");
  for (const auto& column : data.results.columns) {
    if (column.rfind("axis.", 0) == 0) data.axes.push_back(column.substr(5));
  }
  std::set<std::string> grids;
  for (size_t r = 0; r < data.results.rows.size(); ++r) grids.insert(data.results.at(r, "grid"));
  data.several_grids = grids.size() > 1;
  if (const auto study = read_json_file_if_valid(dir + "/study.json")) {
    data.name = study->value("name", "");
    data.description = study->value("description", "");
    for (const auto& cell : study->value("cells", nlohmann::json::array())) {
      for (const auto& axis : cell.value("axes", nlohmann::json::array())) {
        const std::string name = axis.value("axis", "");
        if (name.rfind("--", 0) == 0) data.flag_axes.insert(name.substr(2));
      }
    }
  }
  if (data.name.empty()) data.name = fs::path(dir).filename().string();
  return data;
}

}  // namespace distsgd::report
