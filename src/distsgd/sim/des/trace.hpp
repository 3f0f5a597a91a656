// The simulated run as a Chrome trace (chrome://tracing, Perfetto), in the form of a real run's `distsgd train --trace`
// (core/timeline.hpp): one process per rank (pid = rank, "worker k" or "server s"), lane (tid) 0 compute and 1
// communication, "X" events with the span names the real code uses, so a simulated and a measured trace open side by
// side. Times are the simulated microseconds from the start of the run.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "distsgd/core/timeline.hpp"

namespace distsgd::sim {

class SimulatedTrace {
 public:
  SimulatedTrace(bool enabled, int64_t workers, int64_t servers);
  bool enabled() const { return enabled_; }

  void span(int64_t rank, const std::string& name, double start_seconds, double end_seconds,
            Timeline::Lane lane = Timeline::kCompute);
  size_t size() const { return spans_.size(); }

  // {"traceEvents": [...], "displayTimeUnit": "ms"}, written atomically; streamed, as a long run has millions.
  void write(const std::string& path) const;

 private:
  struct Span {
    int32_t rank;
    int32_t name;
    int32_t lane;
    double start, end;
  };
  bool enabled_;
  int64_t workers_, servers_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, int32_t> name_ids_;
  std::vector<Span> spans_;
};

}  // namespace distsgd::sim
