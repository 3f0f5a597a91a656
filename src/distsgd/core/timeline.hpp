// A per-process timeline of named spans (forward, backward, each bucket's communication, waiting, update),
// written in Chrome trace format (chrome://tracing, Perfetto): one process row per rank, one lane for compute
// and one for communication. Recording is thread-safe (communication completes on Gloo's threads).
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace distsgd {

class Timeline {
 public:
  enum Lane { kCompute = 0, kCommunication = 1 };

  Timeline(bool enabled, int64_t rank, std::string label);
  bool enabled() const { return enabled_; }

  // Microseconds on the wall clock, comparable across processes on one host.
  static int64_t now_us();

  void span(const std::string& name, int64_t start_us, int64_t end_us, Lane lane = kCompute);

  // Records a span from construction to destruction.
  class Scope {
   public:
    Scope(Timeline& timeline, std::string name, Lane lane = kCompute);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Timeline& timeline_;
    std::string name_;
    Lane lane_;
    int64_t start_;
  };

  // This process's events (including the row's name), as a JSON array.
  nlohmann::json events() const;

 private:
  struct Span {
    std::string name;
    int64_t start, end;
    Lane lane;
  };
  bool enabled_;
  int64_t rank_;
  std::string label_;
  mutable std::mutex mutex_;
  std::vector<Span> spans_;
};

// Writes {"traceEvents": [...all events...]} to path (atomically).
void write_chrome_trace(const std::string& path, const std::vector<nlohmann::json>& event_arrays);

}  // namespace distsgd
