// Puts a communication operation on the timeline, from its launch to its completion.
#pragma once
#include "distsgd/comm/communicator.hpp"
#include "distsgd/train/timeline.hpp"

#include <string>

namespace distsgd::algo {

inline comm::Work trace_completion(comm::Work work, train::Timeline& timeline, const std::string& name) {
  if (!timeline.enabled()) return work;
  const int64_t start = train::Timeline::now_us();
  work.on_complete([&timeline, name, start] {
    timeline.span(name, start, train::Timeline::now_us(), train::Timeline::kCommunication);
  });
  return work;
}

}  // namespace distsgd::algo
