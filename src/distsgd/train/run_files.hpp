// The files of a run directory: config.json, metrics.jsonl (one record per evaluation), summary.json.
// JSON files are written atomically; metrics.jsonl is appended and flushed record by record, so a crash loses
// nothing already evaluated.
#pragma once
#include "distsgd/train/run_lock.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <fstream>
#include <string>

namespace distsgd::train {

class RunFiles {
 public:
  // Creates the directory and locks it for this process's lifetime (run_lock.hpp), before anything in it is
  // touched. Refuses a directory that already holds a run unless `overwrite` (start afresh) or `resume` (append to
  // its metrics), and one another live run holds.
  RunFiles(const std::string& dir, bool overwrite, bool resume);

  const std::string& dir() const { return dir_; }
  void write_config(const nlohmann::json& config) const;
  void append_metrics(const nlohmann::json& record);
  // A resumed run: drops the records of evaluations after `step` (rewritten atomically).
  void drop_metrics_after(int64_t step);
  void write_summary(const nlohmann::json& summary) const;

 private:
  std::string dir_;
  RunDirectoryLock lock_;
  std::ofstream metrics_;
};

}  // namespace distsgd::train
