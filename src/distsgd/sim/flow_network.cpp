#include "distsgd/sim/flow_network.hpp"

#include <algorithm>
#include <functional>
#include <limits>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {
namespace {

// A flow with this little left (relative to its size) has arrived: floating-point leftovers of flows that end
// together must not each cost an instant of their own.
constexpr double kArrivedFraction = 1e-9;

}  // namespace

FlowNetwork::FlowNetwork(EventQueue& queue) : queue_(queue) {
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
  f.done = std::move(done);
  ++flows_in_flight_;
  queue_.after(latency, [this, id] { activate(id); });
}

void FlowNetwork::activate(int32_t id) {
  Flow& f = flows_[static_cast<size_t>(id)];
  f.updated = queue_.now();
  f.rate = 0;
  for (int i = 0; i < f.path.count; ++i) {
    const PortId p = f.path.ports[static_cast<size_t>(i)];
    Port& port = ports_[static_cast<size_t>(p)];
    f.position[static_cast<size_t>(i)] = static_cast<int32_t>(port.flows.size());
    port.flows.push_back(id);
    mark_dirty(p);
  }
}

// Takes an arrived flow off its ports (within a recomputation of its component: no port becomes dirty).
void FlowNetwork::detach(int32_t id) {
  Flow& f = flows_[static_cast<size_t>(id)];
  for (int i = 0; i < f.path.count; ++i) {
    const PortId p = f.path.ports[static_cast<size_t>(i)];
    Port& port = ports_[static_cast<size_t>(p)];
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

void FlowNetwork::account(Port& port) {
  const double now = queue_.now();
  port.carried += port.rate_sum * (now - port.updated);
  port.updated = now;
}

double FlowNetwork::carried_bytes(PortId port) const {
  const Port& p = ports_[static_cast<size_t>(port)];
  return p.carried + p.rate_sum * (queue_.now() - p.updated);
}

void FlowNetwork::settle() {
  while (!dirty_.empty()) {
    ++visit_;
    settling_.swap(dirty_);
    dirty_.clear();
    for (const PortId p : settling_) ports_[static_cast<size_t>(p)].dirty = false;
    for (const PortId p : settling_) {
      Port& port = ports_[static_cast<size_t>(p)];
      if (port.visit == visit_) continue;
      if (port.flows.empty()) {  // idle now: nothing to share
        account(port);
        port.rate_sum = 0;
        continue;
      }
      recompute(p);
    }
    // The arrived flows' continuations, once every rate is consistent (they only schedule events).
    for (auto& done : arrived_) {
      if (done) done();
    }
    arrived_.clear();
  }
}

void FlowNetwork::recompute(PortId seed) {
  const uint64_t computation = static_cast<uint64_t>(++recomputations_);
  const double now = queue_.now();
  // The connected component of `seed`: ports joined by flows.
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
  for (const PortId p : component_ports_) account(ports_[static_cast<size_t>(p)]);
  // Bring every flow up to now at its old rate; the arrived ones leave.
  size_t kept = 0;
  for (const int32_t id : component_flows_) {
    Flow& f = flows_[static_cast<size_t>(id)];
    f.remaining -= f.rate * (now - f.updated);
    f.updated = now;
    f.fixed = false;
    // Arrived, or so nearly that the rest would not move the clock (a flow never ends in a later instant for it).
    if (f.remaining <= kArrivedFraction * f.bytes || (f.rate > 0 && now + f.remaining / f.rate <= now)) {
      detach(id);
    } else {
      component_flows_[kept++] = id;
    }
  }
  component_flows_.resize(kept);
  offers_.clear();
  for (const PortId p : component_ports_) {
    Port& port = ports_[static_cast<size_t>(p)];
    port.rate_sum = 0;
    port.left = port.capacity;
    port.unfixed = static_cast<int32_t>(port.flows.size());
    ++port.version;
    if (port.unfixed > 0) offers_.push_back({port.left / port.unfixed, {port.version, p}});
  }
  // Progressive filling: the port offering the least per unfixed flow fixes its flows at that share.
  using Offer = std::pair<double, std::pair<uint32_t, PortId>>;  // share, (version, port)
  std::make_heap(offers_.begin(), offers_.end(), std::greater<Offer>());
  double next_arrival = std::numeric_limits<double>::infinity();
  int32_t first_to_arrive = -1;
  size_t unfixed_flows = component_flows_.size();
  while (!offers_.empty() && unfixed_flows > 0) {  // (the offers left are stale once every flow has its rate)
    std::pop_heap(offers_.begin(), offers_.end(), std::greater<Offer>());
    const auto [share, key] = offers_.back();
    offers_.pop_back();
    Port& port = ports_[static_cast<size_t>(key.second)];
    if (key.first != port.version || port.unfixed == 0) continue;  // stale offer
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
        other.rate_sum += rate;
        if (--other.unfixed > 0 && q != key.second) {
          offers_.push_back({other.left / other.unfixed, {++other.version, q}});
          std::push_heap(offers_.begin(), offers_.end(), std::greater<Offer>());
        }
      }
      const double arrival = now + f.remaining / rate;
      if (arrival < next_arrival) {
        next_arrival = arrival;
        first_to_arrive = id;
      }
    }
  }
  if (first_to_arrive < 0) return;
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
