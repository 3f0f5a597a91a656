#include "distsgd/sim/engine/event_queue.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {

void EventQueue::at(double time, Action action) {
  if (!(std::isfinite(time) && time >= now_)) {  // (the message is built only when needed: this runs per event)
    throw Error("simulator: an event at " + std::to_string(time) + " s is before the clock (" + std::to_string(now_) +
                " s)");
  }
  uint32_t slot;
  if (free_.empty()) {
    slot = static_cast<uint32_t>(actions_.size());
    actions_.push_back(std::move(action));
  } else {
    slot = free_.back();
    free_.pop_back();
    actions_[slot] = std::move(action);
  }
  heap_.push_back({time, next_sequence_++, slot});
  std::push_heap(heap_.begin(), heap_.end(), later);
}

void EventQueue::run() {
  stopped_ = false;
  while (!stopped_ && !heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    const Entry entry = heap_.back();
    heap_.pop_back();
    now_ = entry.time;
    Action action = std::move(actions_[entry.slot]);
    actions_[entry.slot] = nullptr;
    free_.push_back(entry.slot);
    ++events_run_;
    action();
    // The hook may schedule more events, also at this instant (a flow whose last byte is due now).
    if (batch_hook_ && (heap_.empty() || heap_.front().time > now_)) batch_hook_();
  }
}

}  // namespace distsgd::sim
