#include "distsgd/experiment/study_cell_record.hpp"

#include "distsgd/core/json_file.hpp"
#include "distsgd/experiment/run_directory.hpp"

#include <filesystem>

namespace distsgd::experiment {
namespace {

std::string record_path(const std::string& study_dir, const StudyCell& cell) {
  return cell_directory(study_dir, cell) + "/study_cell.json";
}

}  // namespace

std::string cell_directory(const std::string& study_dir, const StudyCell& cell) {
  return study_dir + "/cells/" + cell.id;
}

std::string cell_log_path(const std::string& study_dir, const StudyCell& cell) {
  return study_dir + "/logs/" + cell.id + ".log";
}

std::optional<CellRecord> read_cell_record(const std::string& study_dir, const StudyCell& cell) {
  const auto json = read_json_file_if_valid(record_path(study_dir, cell));
  if (!json || !json->is_object()) return std::nullopt;
  CellRecord record;
  record.status = json->value("status", "");
  record.reason = json->value("reason", "");
  record.seconds = json->value("seconds", 0.0);
  if (json->contains("arguments") && (*json)["arguments"].is_array()) {
    for (const auto& word : (*json)["arguments"]) {
      if (word.is_string()) record.arguments.push_back(word.get<std::string>());
    }
  }
  const bool finished = record.status == "done" || record.status == "failed";
  if (!finished || record.arguments != cell.arguments()) return std::nullopt;
  // A run recorded done whose directory has lost its summary (removed, or the directory emptied) is not finished.
  if (record.status == "done" && !finished_summary(cell_directory(study_dir, cell))) return std::nullopt;
  return record;
}

void write_cell_record(const std::string& study_dir, const StudyCell& cell, const CellRecord& record) {
  std::filesystem::create_directories(cell_directory(study_dir, cell));
  write_json_atomically(record_path(study_dir, cell), {{"status", record.status},
                                                       {"reason", record.reason},
                                                       {"arguments", record.arguments},
                                                       {"seconds", record.seconds}});
}

void remove_cell_record(const std::string& study_dir, const StudyCell& cell) {
  std::error_code ignored;
  std::filesystem::remove(record_path(study_dir, cell), ignored);
}

}  // namespace distsgd::experiment
