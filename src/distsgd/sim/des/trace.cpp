#include "distsgd/sim/des/trace.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {

SimulatedTrace::SimulatedTrace(bool enabled, int64_t workers, int64_t servers)
    : enabled_(enabled), workers_(workers), servers_(servers) {}

void SimulatedTrace::span(int64_t rank, const std::string& name, double start_seconds, double end_seconds,
                          Timeline::Lane lane) {
  if (!enabled_) return;
  auto it = name_ids_.find(name);
  if (it == name_ids_.end()) {
    it = name_ids_.emplace(name, static_cast<int32_t>(names_.size())).first;
    names_.push_back(name);
  }
  spans_.push_back({static_cast<int32_t>(rank), it->second, static_cast<int32_t>(lane), start_seconds, end_seconds});
}

void SimulatedTrace::write(const std::string& path) const {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary);
    require(static_cast<bool>(out), path + ": cannot write the trace");
    out << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
    bool first = true;
    const auto event = [&](const nlohmann::json& e) {
      out << (first ? "" : ",\n") << e.dump();
      first = false;
    };
    // The rows as Timeline::events() names them (train/process.cpp's role_label).
    for (int64_t rank = 0; rank < workers_ + servers_; ++rank) {
      const std::string label =
          rank < workers_ ? "worker " + std::to_string(rank) : "server " + std::to_string(rank - workers_);
      event({{"name", "process_name"}, {"ph", "M"}, {"pid", rank}, {"args", {{"name", label}}}});
      event({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", rank}, {"args", {{"sort_index", rank}}}});
      event({{"name", "thread_name"},
             {"ph", "M"},
             {"pid", rank},
             {"tid", Timeline::kCompute},
             {"args", {{"name", "compute"}}}});
      event({{"name", "thread_name"},
             {"ph", "M"},
             {"pid", rank},
             {"tid", Timeline::kCommunication},
             {"args", {{"name", "communication"}}}});
    }
    std::vector<std::string> quoted;
    for (const auto& n : names_) quoted.push_back(nlohmann::json(n).dump());
    char numbers[96];
    for (const auto& s : spans_) {
      const bool compute = s.lane == Timeline::kCompute;
      std::snprintf(numbers, sizeof numbers, "\"ts\": %.3f, \"dur\": %.3f, \"pid\": %d, \"tid\": %d}", s.start * 1e6,
                    std::max(0.0, s.end - s.start) * 1e6, s.rank, s.lane);
      out << (first ? "" : ",\n") << "{\"name\": " << quoted[static_cast<size_t>(s.name)]
          << ", \"cat\": " << (compute ? "\"compute\"" : "\"communication\"") << ", \"ph\": \"X\", " << numbers;
      first = false;
    }
    out << "\n]}\n";
    require(static_cast<bool>(out), path + ": writing the trace failed");
  }
  std::filesystem::rename(temporary, path);
}

}  // namespace distsgd::sim
