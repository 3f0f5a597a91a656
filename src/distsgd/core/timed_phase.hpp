// One phase of an iteration measured two ways at once: a span on the timeline (trace.json) and a stopwatch whose
// total becomes the phase's seconds in summary.json. Scoped: the phase ends when the object does.
//   { TimedPhase phase(timeline_, "update", update_time_); optimizer_.step(...); }
#pragma once
#include "distsgd/core/timeline.hpp"
#include "distsgd/core/timer.hpp"

#include <string>

namespace distsgd {

class TimedPhase {
 public:
  TimedPhase(Timeline& timeline, std::string name, Stopwatch& stopwatch, Timeline::Lane lane = Timeline::kCompute)
      : span_(timeline, std::move(name), lane), stopwatch_(stopwatch) {
    stopwatch_.start();
  }
  ~TimedPhase() { stopwatch_.stop(); }
  TimedPhase(const TimedPhase&) = delete;
  TimedPhase& operator=(const TimedPhase&) = delete;

 private:
  Timeline::Scope span_;
  Stopwatch& stopwatch_;
};

}  // namespace distsgd
