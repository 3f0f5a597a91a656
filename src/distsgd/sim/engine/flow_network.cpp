#include "distsgd/sim/engine/flow_network.hpp"

#include <algorithm>
#include <functional>
#include <limits>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {
namespace {

// A flow with this little left (relative to its size) has arrived: floating-point leftovers of flows that end
// together must not each cost an instant of their own.
constexpr double kArrivedFraction = 1e-9;
// Components smaller than this are recomputed whole (cheap), larger ones may become groups.
constexpr size_t kSmallestGroup = 4;

using MarkHeap = std::greater<std::pair<double, int32_t>>;

}  // namespace

FlowNetwork::FlowNetwork(EventQueue& queue, bool groups) : queue_(queue), groups_(groups) {
  queue_.set_batch_hook([this] { settle(); });
}

PortId FlowNetwork::add_port(double bytes_per_second) {
  require(bytes_per_second > 0, "simulator: a link needs a positive rate");
  Port port;
  port.capacity = bytes_per_second;
  ports_.push_back(std::move(port));
  return static_cast<PortId>(ports_.size() - 1);
}

void FlowNetwork::transfer(const Path& path, double bytes, double latency, std::function<void()> done) {
  require(bytes >= 0 && latency >= 0, "simulator: a transfer needs non-negative bytes and latency");
  if (bytes == 0 || path.count == 0) {
    queue_.after(latency, std::move(done));
    return;
  }
  int32_t id;
  if (free_flows_.empty()) {
    id = static_cast<int32_t>(flows_.size());
    flows_.emplace_back();
  } else {
    id = free_flows_.back();
    free_flows_.pop_back();
  }
  Flow& f = flows_[static_cast<size_t>(id)];
  f.path = path;
  f.bytes = f.remaining = bytes;
  f.rate = 0;
  f.group = -1;
  f.done = std::move(done);
  ++flows_in_flight_;
  queue_.after(latency, [this, id] { activate(id); });
}

void FlowNetwork::activate(int32_t id) {
  Flow& f = flows_[static_cast<size_t>(id)];
  f.updated = queue_.now();
  f.rate = 0;
  f.group = -1;
  if (groups_ && join_group(id)) return;
  for (int i = 0; i < f.path.count; ++i) {
    const PortId p = f.path.ports[static_cast<size_t>(i)];
    Port& port = ports_[static_cast<size_t>(p)];
    // A group this flow would enter other than by joining it becomes ordinary flows again.
    if (port.grouped) dissolve(p);
    if (!port.flows.empty() && flows_[static_cast<size_t>(port.flows[0])].group >= 0) {
      dissolve(flows_[static_cast<size_t>(port.flows[0])].group);
    }
    f.position[static_cast<size_t>(i)] = static_cast<int32_t>(port.flows.size());
    port.flows.push_back(id);
    mark_dirty(p);
  }
}

// The flow joins a group if it crosses the group's port, its other ports carry only the group's flows, and none of
// them would limit it at the group's new share.
bool FlowNetwork::join_group(int32_t id) {
  Flow& f = flows_[static_cast<size_t>(id)];
  PortId root = -1;
  for (int i = 0; i < f.path.count; ++i) {
    if (ports_[static_cast<size_t>(f.path.ports[static_cast<size_t>(i)])].grouped) {
      root = f.path.ports[static_cast<size_t>(i)];
    }
  }
  if (root < 0) return false;
  Port& lead = ports_[static_cast<size_t>(root)];
  Group& g = lead.group;
  double most = g.most_per_byte;
  for (int i = 0; i < f.path.count; ++i) {
    const PortId q = f.path.ports[static_cast<size_t>(i)];
    if (q == root) continue;
    const Port& port = ports_[static_cast<size_t>(q)];
    if (port.grouped) return false;
    if (!port.flows.empty() && flows_[static_cast<size_t>(port.flows[0])].group != root) return false;
    most = std::max(most, static_cast<double>(port.flows.size() + 1) / port.capacity);
  }
  const double share = lead.capacity / static_cast<double>(lead.flows.size() + 1);
  if (most * share > 1 + 1e-12) return false;
  const double now = queue_.now();
  advance(g, now);
  g.share = share;
  g.most_per_byte = most;
  f.group = root;
  f.mark = g.clock + f.bytes;
  g.marks.emplace_back(f.mark, id);
  std::push_heap(g.marks.begin(), g.marks.end(), MarkHeap());
  for (int i = 0; i < f.path.count; ++i) {
    Port& port = ports_[static_cast<size_t>(f.path.ports[static_cast<size_t>(i)])];
    f.position[static_cast<size_t>(i)] = static_cast<int32_t>(port.flows.size());
    port.flows.push_back(id);
  }
  // Many flows join at one instant (every worker's push): one completion event for all of them, at its end.
  ++g.event;  // the pending one is stale
  if (!g.joined) {
    g.joined = true;
    joined_groups_.push_back(root);
  }
  return true;
}

void FlowNetwork::advance(Group& g, double now) const {
  g.clock += g.share * (now - g.updated);
  g.updated = now;
}

void FlowNetwork::schedule_group(PortId root) {
  Group& g = ports_[static_cast<size_t>(root)].group;
  const uint64_t event = ++group_events_;
  g.event = event;
  if (g.marks.empty()) return;
  const double now = queue_.now();
  const double at = std::max(now, now + (g.marks.front().first - g.clock) / g.share);
  queue_.at(at, [this, root, event] { group_arrivals(root, event); });
}

// The group's first flows to finish arrive; the others' share grows.
void FlowNetwork::group_arrivals(PortId root, uint64_t event) {
  Port& lead = ports_[static_cast<size_t>(root)];
  if (!lead.grouped || lead.group.event != event) return;
  Group& g = lead.group;
  const double now = queue_.now();
  advance(g, now);
  while (!g.marks.empty()) {
    const auto [mark, id] = g.marks.front();
    const double left = mark - g.clock;
    const Flow& f = flows_[static_cast<size_t>(id)];
    if (left > kArrivedFraction * f.bytes && now + left / g.share > now) break;
    std::pop_heap(g.marks.begin(), g.marks.end(), MarkHeap());
    g.marks.pop_back();
    detach(id);
  }
  if (lead.flows.empty()) {
    lead.grouped = false;
  } else {
    const double share = lead.capacity / static_cast<double>(lead.flows.size());
    if (g.most_per_byte * share > 1 + 1e-12) {
      dissolve(root);  // another port could now limit some flows: recompute the component
    } else {
      g.share = share;
      schedule_group(root);
    }
  }
  run_arrived();
}

void FlowNetwork::dissolve(PortId root) {
  Port& lead = ports_[static_cast<size_t>(root)];
  Group& g = lead.group;
  const double now = queue_.now();
  advance(g, now);
  for (const int32_t id : lead.flows) {
    Flow& f = flows_[static_cast<size_t>(id)];
    f.remaining = std::max(0.0, f.mark - g.clock);
    f.rate = g.share;
    f.updated = now;
    f.group = -1;
    f.computed = 0;
  }
  lead.grouped = false;
  g.marks.clear();
  ++g.event;  // its pending event is stale
  mark_dirty(root);
}

void FlowNetwork::form_group(PortId root, double now) {
  Port& lead = ports_[static_cast<size_t>(root)];
  Group& g = lead.group;
  g.clock = 0;
  g.updated = now;
  g.share = flows_[static_cast<size_t>(component_flows_[0])].rate;
  g.most_per_byte = 0;
  for (const PortId q : component_ports_) {
    if (q == root) continue;
    const Port& port = ports_[static_cast<size_t>(q)];
    g.most_per_byte = std::max(g.most_per_byte, static_cast<double>(port.flows.size()) / port.capacity);
  }
  g.marks.clear();
  for (const int32_t id : component_flows_) {
    Flow& f = flows_[static_cast<size_t>(id)];
    f.group = root;
    f.mark = f.remaining;
    g.marks.emplace_back(f.mark, id);
  }
  std::make_heap(g.marks.begin(), g.marks.end(), MarkHeap());
  lead.grouped = true;
  schedule_group(root);
}

// Takes an arrived flow off its ports; its continuation waits in arrived_ until the rates are consistent.
void FlowNetwork::detach(int32_t id) {
  Flow& f = flows_[static_cast<size_t>(id)];
  for (int i = 0; i < f.path.count; ++i) {
    const PortId p = f.path.ports[static_cast<size_t>(i)];
    Port& port = ports_[static_cast<size_t>(p)];
    port.finished_bytes += f.bytes;
    const int32_t at = f.position[static_cast<size_t>(i)];
    const int32_t moved = port.flows.back();
    port.flows[static_cast<size_t>(at)] = moved;
    port.flows.pop_back();
    if (moved == id) continue;
    Flow& m = flows_[static_cast<size_t>(moved)];
    for (int j = 0; j < m.path.count; ++j) {
      if (m.path.ports[static_cast<size_t>(j)] == p &&
          m.position[static_cast<size_t>(j)] == static_cast<int32_t>(port.flows.size())) {
        m.position[static_cast<size_t>(j)] = at;
        break;
      }
    }
  }
  arrived_.push_back(std::move(f.done));
  f.done = nullptr;
  f.group = -1;
  ++f.generation;
  free_flows_.push_back(id);
  --flows_in_flight_;
}

void FlowNetwork::mark_dirty(PortId port) {
  Port& p = ports_[static_cast<size_t>(port)];
  if (!p.dirty) {
    p.dirty = true;
    dirty_.push_back(port);
  }
}

double FlowNetwork::remaining_now(const Flow& f) const {
  const double now = queue_.now();
  if (f.group >= 0) {
    const Group& g = ports_[static_cast<size_t>(f.group)].group;
    return std::max(0.0, f.mark - (g.clock + g.share * (now - g.updated)));
  }
  return std::max(0.0, f.remaining - f.rate * (now - f.updated));
}

double FlowNetwork::carried_bytes(PortId port) const {
  const Port& p = ports_[static_cast<size_t>(port)];
  double carried = p.finished_bytes;
  for (const int32_t id : p.flows) {
    const Flow& f = flows_[static_cast<size_t>(id)];
    carried += f.bytes - remaining_now(f);
  }
  return carried;
}

void FlowNetwork::run_arrived() {
  // Continuations only schedule events (a transfer starts after its latency, in an event): no rate changes here.
  for (size_t i = 0; i < arrived_.size(); ++i) {
    if (arrived_[i]) arrived_[i]();
  }
  arrived_.clear();
}

void FlowNetwork::settle() {
  for (const PortId root : joined_groups_) {
    Port& lead = ports_[static_cast<size_t>(root)];
    lead.group.joined = false;
    if (lead.grouped) schedule_group(root);
  }
  joined_groups_.clear();
  while (!dirty_.empty()) {
    ++round_;
    settling_.swap(dirty_);
    dirty_.clear();
    for (const PortId p : settling_) ports_[static_cast<size_t>(p)].dirty = false;
    for (const PortId p : settling_) {
      const Port& port = ports_[static_cast<size_t>(p)];
      if (port.round == round_ || port.flows.empty() || port.grouped) continue;
      recompute(p);
    }
    run_arrived();
  }
}

// The connected component of `seed` (ports joined by flows) into component_ports_ and component_flows_.
void FlowNetwork::find_component(PortId seed) {
  ++visit_;
  component_ports_.clear();
  component_flows_.clear();
  ports_[static_cast<size_t>(seed)].visit = visit_;
  component_ports_.push_back(seed);
  for (size_t next = 0; next < component_ports_.size(); ++next) {
    const Port& port = ports_[static_cast<size_t>(component_ports_[next])];
    for (const int32_t id : port.flows) {
      Flow& f = flows_[static_cast<size_t>(id)];
      if (f.visit == visit_) continue;
      f.visit = visit_;
      component_flows_.push_back(id);
      for (int i = 0; i < f.path.count; ++i) {
        const PortId q = f.path.ports[static_cast<size_t>(i)];
        if (ports_[static_cast<size_t>(q)].visit != visit_) {
          ports_[static_cast<size_t>(q)].visit = visit_;
          component_ports_.push_back(q);
        }
      }
    }
  }
}

void FlowNetwork::recompute(PortId seed) {
  const uint64_t computation = static_cast<uint64_t>(++recomputations_);
  const double now = queue_.now();
  find_component(seed);
  // Bring every flow up to now at its old rate; the arrived ones leave.
  split_.clear();
  for (const int32_t id : component_flows_) {
    Flow& f = flows_[static_cast<size_t>(id)];
    f.remaining -= f.rate * (now - f.updated);
    f.updated = now;
    f.fixed = false;
    // Arrived, or so nearly that the rest would not move the clock (a flow never ends in a later instant for it).
    if (f.remaining <= kArrivedFraction * f.bytes || (f.rate > 0 && now + f.remaining / f.rate <= now)) {
      for (int i = 0; i < f.path.count; ++i) split_.push_back(f.path.ports[static_cast<size_t>(i)]);
      detach(id);
    }
  }
  if (!split_.empty()) {
    // The flows that left may have cut the component in parts: this recomputation takes the seed's part, the
    // others are recomputed from their own ports (each part needs its own completion event).
    find_component(seed);
    for (const PortId p : split_) {
      if (ports_[static_cast<size_t>(p)].visit != visit_ && !ports_[static_cast<size_t>(p)].flows.empty()) {
        mark_dirty(p);
      }
    }
    if (component_flows_.empty()) return;
  }
  for (const PortId p : component_ports_) ports_[static_cast<size_t>(p)].round = round_;
  offers_.clear();
  for (const PortId p : component_ports_) {
    Port& port = ports_[static_cast<size_t>(p)];
    port.left = port.capacity;
    port.unfixed = static_cast<int32_t>(port.flows.size());
    ++port.version;
    if (port.unfixed > 0) offers_.push_back({port.left / port.unfixed, {port.version, p}});
  }
  // Progressive filling: the port offering the least per unfixed flow fixes its flows at that share. The first
  // round scans (often the only one: a server's link shared by every flow of the component), a heap serves the rest.
  using Offer = std::pair<double, std::pair<uint32_t, PortId>>;  // share, (version, port)
  double next_arrival = std::numeric_limits<double>::infinity();
  int32_t first_to_arrive = -1;
  size_t unfixed_flows = component_flows_.size();
  bool heap = false;
  PortId first_port = -1;
  while (!offers_.empty() && unfixed_flows > 0) {  // (the offers left are stale once every flow has its rate)
    if (!heap) {
      std::swap(*std::min_element(offers_.begin(), offers_.end()), offers_.back());
    } else {
      std::pop_heap(offers_.begin(), offers_.end(), std::greater<Offer>());
    }
    const auto [share, key] = offers_.back();
    offers_.pop_back();
    Port& port = ports_[static_cast<size_t>(key.second)];
    if (key.first != port.version || port.unfixed == 0) continue;  // stale offer
    if (first_port < 0) first_port = key.second;
    const double rate = std::max(share, 1e-12 * port.capacity);
    for (const int32_t id : port.flows) {
      Flow& f = flows_[static_cast<size_t>(id)];
      if (f.fixed) continue;
      f.fixed = true;
      --unfixed_flows;
      f.rate = rate;
      f.computed = computation;
      for (int i = 0; i < f.path.count; ++i) {
        const PortId q = f.path.ports[static_cast<size_t>(i)];
        Port& other = ports_[static_cast<size_t>(q)];
        other.left = std::max(0.0, other.left - rate);
        if (--other.unfixed > 0 && q != key.second) {
          offers_.push_back({other.left / other.unfixed, {++other.version, q}});
          if (heap) std::push_heap(offers_.begin(), offers_.end(), std::greater<Offer>());
        }
      }
      const double arrival = now + f.remaining / rate;
      if (arrival < next_arrival) {
        next_arrival = arrival;
        first_to_arrive = id;
      }
    }
    if (!heap && unfixed_flows > 0) {
      std::make_heap(offers_.begin(), offers_.end(), std::greater<Offer>());
      heap = true;
    }
  }
  if (first_to_arrive < 0) return;
  // Every flow limited by the one port they all cross: a group from now on.
  if (groups_ && component_flows_.size() >= kSmallestGroup && !heap &&
      ports_[static_cast<size_t>(first_port)].flows.size() == component_flows_.size()) {
    form_group(first_port, now);
    return;
  }
  // One event for the whole component: when its first flow arrives, the component is settled again (and the flows
  // arriving with it leave together). A later recomputation of the component makes this event stale.
  const uint32_t generation = flows_[static_cast<size_t>(first_to_arrive)].generation;
  queue_.at(next_arrival, [this, first_to_arrive, generation, computation] {
    const Flow& f = flows_[static_cast<size_t>(first_to_arrive)];
    if (f.generation != generation || f.computed != computation) return;
    mark_dirty(f.path.ports[0]);
  });
}

}  // namespace distsgd::sim
