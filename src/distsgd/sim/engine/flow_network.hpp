// A flow-level network (spec/simulator.md, "Two fidelities" 2): ports with a capacity in bytes per second (a link's
// one direction: a node's NIC out, a server's NIC in, ...), and transfers ("flows") that each cross a path of ports.
// Concurrent flows share every port max-min fairly (progressive filling: the most loaded port fixes the rate of its
// flows first, what they leave elsewhere goes to the others). A transfer waits its latency (alpha) first, then
// moves its bytes; rates are recomputed when a flow starts or ends. So PS incast, gossip hot spots and shared node
// links appear.
// Speed: rates are recomputed once per instant (after the event queue's last event at that time), and only for the
// connected components (ports linked by flows) where a flow started or ended; each component has one pending event,
// its next completion, rather than one per flow. A component whose flows all cross one port that limits every one
// of them (a server's link shared by many workers) becomes a group: its flows share that port equally, so the port
// keeps a virtual clock of the bytes each flow has received and a heap of the flows' finishing marks on it; a flow
// joining or leaving costs O(log n) instead of a recomputation over every flow (processor sharing). A flow that
// would break the group (through another port, or a link that would limit it) dissolves it.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "distsgd/sim/engine/event_queue.hpp"

namespace distsgd::sim {

using PortId = int32_t;

// The ports a transfer crosses (at most 4: sender's own link, sender's node, receiver's node, receiver's own).
struct Path {
  std::array<PortId, 4> ports{};
  int count = 0;
  void add(PortId port) { ports[static_cast<size_t>(count++)] = port; }
};

class FlowNetwork {
 public:
  // Installs itself as the queue's batch hook. `groups`: false recomputes every change (to check the groups).
  explicit FlowNetwork(EventQueue& queue, bool groups = true);

  PortId add_port(double bytes_per_second);
  // Moves `bytes` over `path`: `latency` seconds of start-up, then the bytes at the path's max-min fair rate;
  // `done` runs when the last byte has arrived.
  void transfer(const Path& path, double bytes, double latency, std::function<void()> done);
  // Recomputes the rates where flows started or ended since the last call, and ends the flows that arrived (the
  // queue calls it after each instant).
  void settle();

  size_t port_count() const { return ports_.size(); }
  double capacity(PortId port) const { return ports_[static_cast<size_t>(port)].capacity; }
  // Bytes the port has carried from the start of the run up to now.
  double carried_bytes(PortId port) const;
  int64_t flows_in_flight() const { return flows_in_flight_; }
  double now() const { return queue_.now(); }
  int64_t rate_recomputations() const { return recomputations_; }

 private:
  struct Flow {
    Path path;
    std::array<int32_t, 4> position{};  // index in each port's flow list
    double bytes = 0, remaining = 0, rate = 0, updated = 0;
    uint32_t generation = 0;  // bumped when the slot is reused: events about an earlier flow are ignored
    uint32_t visit = 0;
    uint64_t computed = 0;  // the recomputation that set its rate
    bool fixed = false;
    PortId group = -1;  // the port of its group, if any
    double mark = 0;    // in a group: the port's virtual clock at which the flow has all its bytes
    std::function<void()> done;
  };
  struct Group {
    double clock = 0;  // bytes every member has received since the group formed
    double updated = 0;
    double share = 0;          // bytes per second of each member
    double most_per_byte = 0;  // max over the group's other ports of flows / capacity (only grows: conservative)
    uint64_t event = 0;        // the pending completion event's number
    bool joined = false;       // flows joined it at this instant: its next completion is scheduled at the instant's end
    std::vector<std::pair<double, int32_t>> marks;  // min-heap of (mark, flow)
  };
  struct Port {
    double capacity = 0;
    std::vector<int32_t> flows;
    double finished_bytes = 0;  // of the flows that have ended
    bool dirty = false;
    uint32_t visit = 0;  // the last search that reached it
    uint32_t round = 0;  // the last settle() round that recomputed it
    // Scratch for progressive filling.
    double left = 0;
    int32_t unfixed = 0;
    uint32_t version = 0;
    bool grouped = false;  // this port leads a group
    Group group;
  };

  void activate(int32_t flow);
  bool join_group(int32_t flow);
  void form_group(PortId port, double now);
  void dissolve(PortId port);
  void advance(Group& group, double now) const;
  void schedule_group(PortId port);
  void group_arrivals(PortId port, uint64_t event);
  void detach(int32_t flow);
  void mark_dirty(PortId port);
  void recompute(PortId seed);
  void find_component(PortId seed);
  void run_arrived();
  double remaining_now(const Flow& flow) const;

  EventQueue& queue_;
  bool groups_;
  std::vector<Port> ports_;
  std::vector<Flow> flows_;
  std::vector<int32_t> free_flows_;
  std::vector<PortId> dirty_;
  std::vector<PortId> joined_groups_;  // groups that flows joined at this instant
  uint32_t visit_ = 0, round_ = 0;
  int64_t flows_in_flight_ = 0;
  int64_t recomputations_ = 0;
  uint64_t group_events_ = 0;
  // Scratch, kept to avoid reallocating.
  std::vector<PortId> component_ports_, settling_, split_;
  std::vector<int32_t> component_flows_;
  std::vector<std::function<void()>> arrived_;  // callbacks of the flows that ended, run once rates are consistent
  std::vector<std::pair<double, std::pair<uint32_t, PortId>>> offers_;
};

}  // namespace distsgd::sim
