// What every part of one discrete-event simulation shares: the inputs, the clock, the network and its ports, the
// collectives, each worker's compute (one task at a time: its training thread) and each server's (its shard lock), each
// worker's draws, the trace, and the figures the workloads count (bytes sent, staleness).
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "distsgd/sim/analytical/prediction.hpp"
#include "distsgd/sim/des/settings.hpp"
#include "distsgd/sim/des/trace.hpp"
#include "distsgd/sim/engine/event_queue.hpp"
#include "distsgd/sim/engine/fifo_resource.hpp"
#include "distsgd/sim/engine/flow_network.hpp"
#include "distsgd/sim/engine/ring_collectives.hpp"
#include "distsgd/sim/platform/busy_delivery_draws.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "distsgd/sim/platform/cluster_network.hpp"
#include "distsgd/sim/platform/heterogeneity.hpp"
#include "distsgd/sim/platform/model_profile.hpp"

namespace distsgd::sim {

using Next = std::function<void()>;

class DesContext {
 public:
  DesContext(const ModelProfile& profile, const ClusterDescription& cluster, const DesSettings& settings);
  DesContext(const DesContext&) = delete;
  DesContext& operator=(const DesContext&) = delete;

  const ModelProfile& profile;
  const ClusterDescription& cluster;
  const DesSettings& settings;
  const int64_t workers, servers;

  EventQueue queue;
  FlowNetwork network{queue};
  std::vector<WorkerVariability> variability;  // per worker
  ClusterNetwork ports;
  RingCollectives collectives;
  std::vector<FifoResource> compute;     // per worker: its training thread (and what locks its model)
  std::vector<FifoResource> server_cpu;  // per server: updates under the shard's lock, one at a time
  SimulatedTrace trace;

  // Counted by the workloads.
  std::vector<double> bytes_sent;        // per worker, from the start
  std::vector<int64_t> iteration;        // per worker: the iteration it is in (the worker loop sets it)
  std::map<int64_t, int64_t> staleness;  // gradient staleness (server updates since the worker's parameters)
  std::map<int64_t, int64_t> clock_gap;  // SSP: a pull's clock minus the slowest worker's, when released

  double model_bytes() const { return model_bytes_; }
  // The optimizer step over `bytes` on this worker (the profile's update cost, times its compute factor).
  double update_seconds(int64_t worker, double bytes) const;
  // The same work on a server (servers are homogeneous). Its processing of each message (the cluster's cost per
  // request and per byte) is charged where the message arrives (send_to_server), as a virtual run's ShardServer
  // charges it.
  double server_update_seconds(double bytes) const { return profile.update_seconds_per_byte * bytes; }
  bool measuring(int64_t worker) const { return iteration[static_cast<size_t>(worker)] >= settings.warmup; }

  // A task on the worker's compute (in submission order), then `next`; `span` (may be null) names it on the trace.
  void run(int64_t worker, const char* span, double seconds, Next next);
  void run_on_server(int64_t server, const char* span, double seconds, Next next);
  // Like run(), but the worker sleeps (--slowdown): it holds its training thread, not a core.
  void sleep(int64_t worker, const char* span, double seconds, Next next);
  // A span on the trace from `start` to now (waits, and operations the real code times as one phase).
  void span(int64_t rank, const std::string& name, double start, Timeline::Lane lane = Timeline::kCompute);
  int64_t server_rank(int64_t server) const { return workers + server; }

  // Messages of `bytes` (one alpha each); the sender's bytes_sent counts them when it is a worker.
  // A message to a server goes to that server's handler of the worker (algo/ps/shard_server.cpp: one thread per
  // worker, which posts its next receive only once it has handled the last message) and, as over Gloo (a send's
  // bytes move only once the matching receive is posted), starts moving only when that handler is free: a worker
  // that runs ahead of a busy server waits for it instead of queueing messages there without bound. The workload
  // frees the handler with handled() where the real one loops: once its reply has reached the worker, or its update
  // is done where it sends none. Every message (a push, a pull request, a model) then costs the server its
  // processing, the cluster's server_seconds_per_request + server_seconds_per_byte x bytes, on the server's compute
  // before `arrived`.
  void send_to_server(int64_t worker, int64_t server, double bytes, Next arrived);
  void handled(int64_t worker, int64_t server);
  void send_to_worker(int64_t server, int64_t worker, double bytes, Next arrived);
  // `read_header_first`: the receiver reads the header before it posts the payload's receive (GossipEndpoint's
  // receiving thread, for pushes), so a busy host delays the two one after the other; elsewhere both receives are
  // posted ahead and the later of the two delays counts.
  void send_between_workers(int64_t from, int64_t to, double bytes, Next arrived, bool read_header_first = false);

  // ClusterDescription::busy_delivery: how late the next message reaches its receiver, from the ranks computing now
  // (workers' compute and servers' processing; 0 where a core is free or the delay does not apply).
  double busy_delivery_delay();
  // Workers computing and servers processing since before now (the busy delivery's rule; sleeps do not count).
  int64_t ranks_computing() const;

 private:
  // `arrived`, later by a busy receiver's delay where the cluster has one: a draw for each Gloo message the real
  // exchange is made of. distsgd's parameter-server and gossip protocols send a header and then a payload (two
  // messages, as the virtual cluster delivers them); a bare request (no bytes) is a header alone.
  Next delivered(double bytes, Next arrived, bool read_header_first = false);

  // ClusterDescription::shared_cores: each rank's compute is a flow of core-seconds through a port of one core (its
  // thread) and the cores' port, so n ranks computing at once on C < n cores each get C/n of a core.
  void share_cores(double cores);

  struct Handler {
    bool busy = false;                            // receiving or handling a message: its next receive is not posted
    std::deque<std::pair<double, Next>> waiting;  // sends (bytes, arrived) not started
  };
  Handler& handler(int64_t worker, int64_t server) { return handlers_[static_cast<size_t>(server * workers + worker)]; }
  void start_send_to_server(int64_t worker, int64_t server, double bytes, Next arrived);

  std::vector<Handler> handlers_;  // per server, per worker
  double model_bytes_;
  BusyDeliveryDraws delivery_draws_;
};

}  // namespace distsgd::sim
