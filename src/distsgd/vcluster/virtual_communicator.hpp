// The virtual cluster's transport (spec/virtual-cluster.md): every rank of a run is an actor of one
// sim::ActorScheduler in this process, and a Fabric carries their messages. A send copies the tensor; once the
// receiver has posted a matching receive (Gloo's rendezvous: no data moves before), its bytes go over the simulated
// cluster's flow network (sim/platform/cluster_network.hpp: links shared max-min fairly, alpha per message), and the
// send and the receive complete when the last byte has arrived, at that virtual time. Collectives run as the
// simulator's ring collectives (sim/engine/ring_collectives.hpp: steps on the flow network, as Gloo runs them), and
// their arithmetic is done once every worker has joined: sums in rank order, so the result is the same on every worker
// and in every run. Without a network (Fabric::ideal) every message arrives at the instant it is sent: ranks as
// threads, for tests of the algorithms over an in-process transport.
#pragma once
#include "distsgd/comm/communicator.hpp"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace distsgd::sim {
class ActorScheduler;
class ClusterNetwork;
class FlowNetwork;
class RingCollectives;
}  // namespace distsgd::sim

namespace distsgd::vcluster {

class VirtualWork;

// The in-process network all ranks of one virtual run share.
class Fabric {
 public:
  // Messages over `network` (the cluster's ports); collectives on `collectives`.
  Fabric(sim::ActorScheduler& scheduler, sim::FlowNetwork& network, sim::ClusterNetwork& cluster,
         sim::RingCollectives& collectives, int64_t workers, int64_t servers);
  // Every message arrives at once.
  static std::unique_ptr<Fabric> ideal(sim::ActorScheduler& scheduler, int64_t workers, int64_t servers);
  ~Fabric();

  int64_t workers() const { return workers_; }
  int64_t world_size() const { return workers_ + servers_; }

  comm::Work send(int64_t from, int64_t to, int64_t tag, const at::Tensor& tensor);
  comm::Work receive(int64_t at, int64_t from, int64_t tag, at::Tensor tensor);
  enum class Collective { kAllreduce, kAlltoall, kAllgather, kBroadcast, kBarrier };
  // Worker `worker`'s next collective (the i-th call of each worker is one collective, as on a process group).
  comm::Work collective(int64_t worker, Collective kind, at::Tensor output, at::Tensor input,
                        std::vector<at::Tensor> outputs, int64_t root);
  // The world's barrier (workers and servers).
  void barrier_world(int64_t rank);

  // A message that has arrived is delivered `delay()` seconds later, in its pair's order (a busy host's receiving
  // thread waits for a core: ClusterDescription::busy_delivery, as the DES delays it).
  void set_delivery_delay(std::function<double()> delay) { delivery_delay_ = std::move(delay); }

  void store_set(const std::string& key, const std::string& value);
  std::string store_get(const std::string& key);  // blocks the calling actor until the key is set
  bool store_has(const std::string& key) const { return store_.count(key) > 0; }
  // The simulated node a rank is on, as a host key (every rank on one node without a network).
  std::string host_key(int64_t rank) const;

 private:
  Fabric(sim::ActorScheduler& scheduler, int64_t workers, int64_t servers);
  struct Message;
  struct Channel;
  struct Instance;
  void transfer(int64_t from, int64_t to, double bytes, std::function<void()> arrived);
  void start(std::shared_ptr<Message> message);  // a matched send: its bytes go over the network
  void arrive(int64_t from, int64_t to);
  void finish_collective(int64_t index, int64_t worker);

  sim::ActorScheduler& scheduler_;
  sim::FlowNetwork* network_ = nullptr;
  sim::ClusterNetwork* cluster_ = nullptr;
  sim::RingCollectives* collectives_ = nullptr;
  int64_t workers_, servers_;
  // Per ordered pair, the matched messages in the order their transfers started: one is delivered only after every
  // earlier one of its pair, as over one TCP connection.
  std::map<std::pair<int64_t, int64_t>, std::deque<std::shared_ptr<Message>>> in_flight_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, Channel> channels_;  // (from, to, tag)
  std::deque<Instance> instances_;
  int64_t first_instance_ = 0;
  std::vector<int64_t> collectives_called_;  // per worker
  std::map<std::string, std::string> store_;
  std::function<double()> delivery_delay_;
  int64_t world_barriers_arrived_ = 0, world_barriers_done_ = 0;
};

// One rank's view of the fabric, as the algorithms see every transport.
class VirtualCommunicator final : public comm::Communicator {
 public:
  VirtualCommunicator(Fabric& fabric, int64_t rank);

  comm::Work allreduce_sum(at::Tensor tensor) override;
  comm::Work alltoall(at::Tensor output, at::Tensor input) override;
  comm::Work allgather(std::vector<at::Tensor> outputs, at::Tensor input) override;
  comm::Work broadcast(at::Tensor tensor, int64_t root) override;
  void barrier_workers() override;
  comm::Work send(at::Tensor tensor, int64_t destination, int64_t tag) override;
  comm::Work receive(at::Tensor tensor, int64_t source, int64_t tag) override;
  void barrier_world() override;
  void store_set(const std::string& key, const std::string& value) override { fabric_.store_set(key, value); }
  std::string store_get(const std::string& key) override { return fabric_.store_get(key); }
  bool store_has(const std::string& key) override { return fabric_.store_has(key); }
  std::string host_key() const override { return fabric_.host_key(rank()); }

 private:
  Fabric& fabric_;
};

}  // namespace distsgd::vcluster
