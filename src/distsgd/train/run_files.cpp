#include "distsgd/train/run_files.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace distsgd::train {
namespace fs = std::filesystem;

RunFiles::RunFiles(const std::string& dir, bool overwrite, bool resume) : dir_(dir), lock_(dir) {
  const fs::path metrics = fs::path(dir) / "metrics.jsonl";
  if (fs::exists(metrics) && !resume) {
    require(overwrite, "run directory " + dir +
                           " already holds a run; choose another --out, continue it with --resume " + dir +
                           ", or replace it with --overwrite");
    for (const char* name :
         {"metrics.jsonl", "summary.json", "config.json", "checkpoint.pt", "trace.json", "parameters.pt"}) {
      fs::remove(fs::path(dir) / name);
    }
    fs::remove_all(fs::path(dir) / "checkpoints");
  }
  // A summary says the run ended (train/resume_settings.hpp); the resumed run writes a new one when it does.
  if (resume) fs::remove(fs::path(dir) / "summary.json");
  std::error_code ec;
  fs::create_directories(dir, ec);
  require(!ec, "cannot create run directory " + dir + ": " + ec.message());
  metrics_.open(metrics, std::ios::app);
  require(static_cast<bool>(metrics_), "cannot write " + metrics.string());
}

void RunFiles::write_config(const nlohmann::json& config) const {
  write_json_atomically((fs::path(dir_) / "config.json").string(), config);
}

void RunFiles::append_metrics(const nlohmann::json& record) { metrics_ << record.dump() << '\n' << std::flush; }

void RunFiles::drop_metrics_after(int64_t step) {
  const fs::path path = fs::path(dir_) / "metrics.jsonl";
  std::string kept, line;
  {
    std::ifstream in(path);
    while (std::getline(in, line)) {
      // A line the stopped run did not finish writing is dropped too.
      const auto record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (record.is_object() && record.value("step", int64_t{-1}) <= step) kept += line + "\n";
    }
  }
  metrics_.close();
  const std::string tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << kept;
    require(static_cast<bool>(out), "cannot write " + tmp);
  }
  fs::rename(tmp, path);
  metrics_.open(path, std::ios::app);
  require(static_cast<bool>(metrics_), "cannot write " + path.string());
}

void RunFiles::write_summary(const nlohmann::json& summary) const {
  write_json_atomically((fs::path(dir_) / "summary.json").string(), summary);
}

}  // namespace distsgd::train
