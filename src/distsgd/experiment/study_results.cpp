#include "distsgd/experiment/study_results.hpp"

#include "distsgd/experiment/run_directory.hpp"
#include "distsgd/experiment/self_command.hpp"
#include "distsgd/experiment/study_cell_record.hpp"
#include "distsgd/experiment/study_csv.hpp"

#include <nlohmann/json.hpp>

#include <set>

namespace distsgd::experiment {
namespace {

using Row = nlohmann::ordered_json;

// summary.json's scalar figures, nested objects flattened with dots; lists (per_worker, server_statistics, the
// network's links) stay in the run directory.
void add_flattened(Row& row, const nlohmann::json& object, const std::string& prefix) {
  for (const auto& [key, value] : object.items()) {
    if (value.is_object()) {
      add_flattened(row, value, prefix + key + ".");
    } else if (!value.is_array()) {
      row[prefix + key] = value;
    }
  }
}

// Every axis of every grid, in the order first met: their columns come in that order.
std::vector<std::string> axis_names(const std::vector<StudyCell>& cells) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const auto& cell : cells) {
    for (const auto& [axis, label] : cell.axis_labels) {
      if (seen.insert(axis).second) names.push_back(axis);
    }
  }
  return names;
}

std::string axis_column(const std::string& axis) {
  return "axis." + (axis.rfind("--", 0) == 0 ? axis.substr(2) : axis);
}

Row identity(const StudyCell& cell) {
  Row row;
  row["cell"] = cell.id;
  row["grid"] = cell.grid;
  row["label"] = cell.label;
  return row;
}

void add_axes(Row& row, const StudyCell& cell, const std::vector<std::string>& axes) {
  for (const auto& axis : axes) row[axis_column(axis)] = cell.axis_label(axis);
}

void add_prediction(Row& row, const CellPrediction* p) {
  const auto figure = [&](double value) { return p && p->available ? Row(value) : Row(); };
  row["predicted.samples_per_second"] = figure(p ? p->samples_per_second : 0);
  row["predicted.iteration_seconds"] = figure(p ? p->iteration_seconds : 0);
  row["predicted.scaling_efficiency"] = figure(p ? p->scaling_efficiency : 0);
  row["predicted.exposed_communication_seconds"] = figure(p ? p->exposed_communication_seconds : 0);
  // The range over the clusters that fit a calibration's points within their noise (empty without one).
  const bool ranged = p && p->available && p->samples_per_second_high > 0;
  row["predicted.samples_per_second_low"] = ranged ? Row(p->samples_per_second_low) : Row();
  row["predicted.samples_per_second_high"] = ranged ? Row(p->samples_per_second_high) : Row();
  row["predicted.cluster"] = p ? p->cluster : "";
  row["predicted.fidelity"] = p && p->available ? p->fidelity : "";
  row["predicted.note"] = p && !p->available ? p->note : "";
}

}  // namespace

void write_study_results(const std::string& study_dir, const std::vector<StudyCell>& cells,
                         const std::map<std::string, CellPrediction>& predictions) {
  const auto axes = axis_names(cells);
  std::vector<Row> results, curves;
  for (const auto& cell : cells) {
    Row row = identity(cell);
    const auto record = cell.simulated_only ? std::nullopt : read_cell_record(study_dir, cell);
    const std::string run_dir = cell_directory(study_dir, cell);
    row["status"] = cell.simulated_only ? "simulated" : record ? record->status : "pending";
    row["reason"] = record ? record->reason : "";
    add_axes(row, cell, axes);
    row["arguments"] = arguments_text(cell.arguments());
    row["run_dir"] = cell.simulated_only ? "" : "cells/" + cell.id;
    row["cell_seconds"] = record ? Row(record->seconds) : Row();
    // The configuration every row has, run or not (summary.json repeats the first four for the runs).
    row["algorithm"] = cell.config.algorithm;
    row["workers"] = cell.config.workers;
    row["servers"] = cell.config.servers;
    row["batch_size"] = cell.config.batch_size;
    row["net"] = cell.config.net;
    const auto prediction = predictions.find(cell.id);
    add_prediction(row, prediction == predictions.end() ? nullptr : &prediction->second);
    if (record) {
      if (const auto summary = finished_summary(run_dir)) {
        nlohmann::json figures = *summary;
        figures.erase("out");  // the run_dir column says where it is
        add_flattened(row, figures, "");
      }
      for (const auto& evaluation : evaluation_records(run_dir)) {
        Row point = identity(cell);
        add_axes(point, cell, axes);
        add_flattened(point, evaluation, "");
        curves.push_back(std::move(point));
      }
    }
    results.push_back(std::move(row));
  }
  write_csv_atomically(study_dir + "/results.csv", table_of(results, {}));
  std::vector<std::string> curve_columns{"cell", "grid", "label"};
  for (const auto& axis : axes) curve_columns.push_back(axis_column(axis));
  write_csv_atomically(study_dir + "/curves.csv", table_of(curves, curve_columns));
}

}  // namespace distsgd::experiment
