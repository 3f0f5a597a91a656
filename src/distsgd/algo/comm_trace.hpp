// Puts a communication operation on the timeline, from its launch to its completion.
#pragma once
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/timeline.hpp"

#include <string>

namespace distsgd::algo {

inline comm::Work trace_completion(comm::Work work, Timeline& timeline, const std::string& name) {
  if (!timeline.enabled()) return work;
  const int64_t start = Timeline::now_us();
  work.on_complete(
      [&timeline, name, start] { timeline.span(name, start, Timeline::now_us(), Timeline::kCommunication); });
  return work;
}

}  // namespace distsgd::algo
