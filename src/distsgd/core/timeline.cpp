#include "distsgd/core/timeline.hpp"

#include "distsgd/core/json_file.hpp"
#include "distsgd/core/runtime.hpp"

#include <nlohmann/json.hpp>

#include <chrono>

namespace distsgd {

Timeline::Timeline(bool enabled, int64_t rank, std::string label)
    : enabled_(enabled), rank_(rank), label_(std::move(label)) {}

int64_t Timeline::now_us() {
  // A virtual cluster's trace is on its virtual clock (from 0 at the run's start).
  if (auto* x = runtime::executive()) return static_cast<int64_t>(x->now() * 1e6);
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Timeline::span(const std::string& name, int64_t start_us, int64_t end_us, Lane lane) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  spans_.push_back({name, start_us, end_us, lane});
}

Timeline::Scope::Scope(Timeline& timeline, std::string name, Lane lane)
    : timeline_(timeline), name_(std::move(name)), lane_(lane), start_(timeline.enabled() ? now_us() : 0) {}

Timeline::Scope::~Scope() {
  if (timeline_.enabled()) timeline_.span(name_, start_, now_us(), lane_);
}

nlohmann::json Timeline::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank_}, {"args", {{"name", label_}}}});
  events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", rank_}, {"args", {{"sort_index", rank_}}}});
  events.push_back(
      {{"name", "thread_name"}, {"ph", "M"}, {"pid", rank_}, {"tid", kCompute}, {"args", {{"name", "compute"}}}});
  events.push_back({{"name", "thread_name"},
                    {"ph", "M"},
                    {"pid", rank_},
                    {"tid", kCommunication},
                    {"args", {{"name", "communication"}}}});
  for (const auto& s : spans_) {
    events.push_back({{"name", s.name},
                      {"cat", s.lane == kCompute ? "compute" : "communication"},
                      {"ph", "X"},
                      {"ts", s.start},
                      {"dur", std::max<int64_t>(0, s.end - s.start)},
                      {"pid", rank_},
                      {"tid", static_cast<int>(s.lane)}});
  }
  return events;
}

void write_chrome_trace(const std::string& path, const std::vector<nlohmann::json>& event_arrays) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& events : event_arrays) {
    for (const auto& e : events) all.push_back(e);
  }
  write_json_atomically(path, {{"traceEvents", all}, {"displayTimeUnit", "ms"}});
}

}  // namespace distsgd
