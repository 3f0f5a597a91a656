#include "distsgd/sim/flow_network.hpp"

#include <algorithm>
#include <queue>

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
  f.scheduled = false;
  for (int i = 0; i < f.path.count; ++i) {
    Port& port = ports_[static_cast<size_t>(f.path.ports[static_cast<size_t>(i)])];
    f.position[static_cast<size_t>(i)] = static_cast<int32_t>(port.flows.size());
    port.flows.push_back(id);
    mark_dirty(f.path.ports[static_cast<size_t>(i)]);
  }
}

void FlowNetwork::detach(int32_t id) {
  Flow& f = flows_[static_cast<size_t>(id)];
  for (int i = 0; i < f.path.count; ++i) {
    const PortId p = f.path.ports[static_cast<size_t>(i)];
    Port& port = ports_[static_cast<size_t>(p)];
    account(port);
    port.rate_sum -= f.rate;
    const int32_t at = f.position[static_cast<size_t>(i)];
    const int32_t moved = port.flows.back();
    port.flows[static_cast<size_t>(at)] = moved;
    port.flows.pop_back();
    if (moved != id) {
      Flow& m = flows_[static_cast<size_t>(moved)];
      for (int j = 0; j < m.path.count; ++j) {
        if (m.path.ports[static_cast<size_t>(j)] == p &&
            m.position[static_cast<size_t>(j)] == static_cast<int32_t>(port.flows.size())) {
          m.position[static_cast<size_t>(j)] = at;
          break;
        }
      }
    }
    mark_dirty(p);
  }
}

void FlowNetwork::finish(int32_t id, uint32_t generation) {
  Flow& f = flows_[static_cast<size_t>(id)];
  if (f.generation != generation) return;  // its rate changed since: a later event ends it
  ++f.generation;
  detach(id);
  auto done = std::move(f.done);
  f.done = nullptr;
  free_flows_.push_back(id);
  --flows_in_flight_;
  if (done) done();
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
  if (dirty_.empty()) return;
  ++visit_;
  // A recomputation may not add dirty ports (it only schedules events), so the list is stable here.
  for (const PortId p : dirty_) {
    Port& port = ports_[static_cast<size_t>(p)];
    if (port.visit == visit_) continue;
    if (port.flows.empty()) {  // idle now: nothing to share
      account(port);
      port.rate_sum = 0;
      continue;
    }
    recompute(p);
  }
  for (const PortId p : dirty_) ports_[static_cast<size_t>(p)].dirty = false;
  dirty_.clear();
}

void FlowNetwork::recompute(PortId seed) {
  ++recomputations_;
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
  for (const PortId p : component_ports_) {
    Port& port = ports_[static_cast<size_t>(p)];
    account(port);
    port.rate_sum = 0;
    port.left = port.capacity;
    port.unfixed = static_cast<int32_t>(port.flows.size());
    ++port.version;
  }
  // Bring every flow's remaining bytes up to now at its old rate.
  for (const int32_t id : component_flows_) {
    Flow& f = flows_[static_cast<size_t>(id)];
    f.remaining = std::max(0.0, f.remaining - f.rate * (now - f.updated));
    f.updated = now;
    f.fixed = false;
  }
  // Progressive filling: the port offering the least per unfixed flow fixes its flows at that share.
  using Offer = std::pair<double, std::pair<uint32_t, PortId>>;  // share, (version, port)
  std::priority_queue<Offer, std::vector<Offer>, std::greater<Offer>> offers;
  for (const PortId p : component_ports_) {
    const Port& port = ports_[static_cast<size_t>(p)];
    if (port.unfixed > 0) offers.push({port.left / port.unfixed, {port.version, p}});
  }
  while (!offers.empty()) {
    const auto [share, key] = offers.top();
    offers.pop();
    Port& port = ports_[static_cast<size_t>(key.second)];
    if (key.first != port.version || port.unfixed == 0) continue;  // stale offer
    for (const int32_t id : port.flows) {
      Flow& f = flows_[static_cast<size_t>(id)];
      if (f.fixed) continue;
      f.fixed = true;
      const double old_rate = f.rate;
      f.rate = std::max(share, 1e-12 * port.capacity);
      for (int i = 0; i < f.path.count; ++i) {
        const PortId q = f.path.ports[static_cast<size_t>(i)];
        Port& other = ports_[static_cast<size_t>(q)];
        other.left = std::max(0.0, other.left - f.rate);
        other.rate_sum += f.rate;
        --other.unfixed;
        if (q != key.second && other.unfixed > 0) offers.push({other.left / other.unfixed, {++other.version, q}});
      }
      if (f.scheduled && f.rate == old_rate) continue;  // its queued completion still holds
      // A new completion time: the event already queued (if any) becomes stale.
      const uint32_t generation = ++f.generation;
      f.scheduled = true;
      const double left = f.remaining <= kArrivedFraction * f.bytes ? 0.0 : f.remaining / f.rate;
      queue_.at(now + left, [this, id, generation] { finish(id, generation); });
    }
  }
}

}  // namespace distsgd::sim
