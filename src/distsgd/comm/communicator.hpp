// All communication of a distributed run, as an interface with two transports: GlooCommunicator (c10d/Gloo over
// TCP: one process group over the world for point-to-point parameter-server traffic, one over the workers for
// collectives; nothing outside comm/ includes c10d) and the virtual cluster's in-process one
// (vcluster/virtual_communicator.hpp), which delivers every message at the time a simulated network gives it.
#pragma once
#include "distsgd/comm/liveness.hpp"

#include <ATen/core/Tensor.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace distsgd::comm {

// Handle of an operation in flight. wait() throws distsgd::Error naming the operation when it failed or timed out.
class Work {
 public:
  // What a transport implements for each operation.
  struct Impl {
    virtual ~Impl() = default;
    virtual void wait() = 0;
    virtual void on_complete(std::function<void()> callback) = 0;
  };

  Work() = default;
  explicit Work(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  void wait() {
    if (!impl_) return;
    auto impl = std::move(impl_);  // done once waited, also when it failed
    impl->wait();
  }
  bool done() const { return !impl_; }  // true once waited (or never started)
  // Runs callback (on a communication thread) when the operation completes; at once if it already has.
  void on_complete(std::function<void()> callback) {
    if (impl_) {
      impl_->on_complete(std::move(callback));
    } else {
      callback();
    }
  }
  Impl* impl() { return impl_.get(); }

 private:
  std::shared_ptr<Impl> impl_;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int64_t rank() const { return rank_; }
  int64_t world_size() const { return world_size_; }
  int64_t workers() const { return workers_; }
  int64_t servers() const { return world_size_ - workers_; }
  bool is_worker() const { return rank_ < workers_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Collectives among the workers in the current group (worker_index() is this worker's place in it, worker 0 is
  // always index 0). Tensors must stay alive until the work is waited.
  virtual Work allreduce_sum(at::Tensor tensor) = 0;
  // Equal splits: slice j of `input` goes to worker j; slice i of `output` comes from worker i.
  virtual Work alltoall(at::Tensor output, at::Tensor input) = 0;
  // outputs[i] receives worker i's `input`.
  virtual Work allgather(std::vector<at::Tensor> outputs, at::Tensor input) = 0;
  virtual Work broadcast(at::Tensor tensor, int64_t root) = 0;
  virtual void barrier_workers() = 0;

  // Point to point over the world group, with a tag per message kind.
  virtual Work send(at::Tensor tensor, int64_t destination, int64_t tag) = 0;
  virtual Work receive(at::Tensor tensor, int64_t source, int64_t tag) = 0;
  virtual void barrier_world() = 0;

  // Small values through the rendezvous store (e.g. announcing results).
  virtual void store_set(const std::string& key, const std::string& value) = 0;
  virtual std::string store_get(const std::string& key) = 0;  // waits up to the timeout
  virtual bool store_has(const std::string& key) = 0;         // does not wait

  // Which host this process is on, for the algorithms that group a host's workers (BSP's local aggregation): empty
  // for the machine it runs on (algo/ps/host_groups.cpp reads its name and network namespace); the virtual cluster
  // names the simulated node the rank is on.
  virtual std::string host_key() const { return {}; }

  // Starts watching every process of the run (liveness.hpp); null until then, and always in a transport whose
  // processes cannot be lost (in-process).
  virtual void start_liveness(LivenessOptions options) {}
  virtual Liveness* liveness() { return nullptr; }
  // Nobody in the run trained for the timeout (as this process's liveness beats saw it; false without liveness).
  // Keep-alive senders (a gossip endpoint's, a parameter-server client's) stop vouching for this process then: a
  // training thread may be stuck, and the peers' bounded waits are what end such a run with an error.
  bool nobody_trained_for_the_timeout();

  // For runs that go on without lost workers: before every collective, the workers agree through the store on who
  // takes part (worker 0 waits for each member to arrive or be declared lost, then publishes the list), and the
  // survivors form a new group when someone is missing. Costs a few store round trips per collective.
  void agree_on_workers_before_collectives() { agree_before_collectives_ = true; }
  int64_t worker_index() const;  // in the current group
  int64_t worker_count() const { return static_cast<int64_t>(worker_ranks_.size()); }
  const std::vector<int64_t>& worker_ranks() const { return worker_ranks_; }  // of the current group, ascending
  // The agreement now (when enabled; otherwise nothing), e.g. before cutting work by worker_index().
  void agree_on_workers() {
    if (agree_before_collectives_) agree_now();
  }
  // Waits until every worker of the group has come here (or was declared lost), however long the others still
  // train: workers that train independently meet so before a collective, which would otherwise time out while a
  // straggler is still far behind. The wait fails only when no worker trained for the timeout (liveness.hpp).
  void meet() { agree_now(); }

 protected:
  // Ranks [0, workers) are workers, the rest servers. Every operation is bounded by `timeout`.
  Communicator(int64_t rank, int64_t world_size, int64_t workers, std::chrono::milliseconds timeout);
  // Agreement on the members of the current group (transports whose members can be lost).
  virtual void agree_now() {}

  int64_t rank_, world_size_, workers_;
  std::chrono::milliseconds timeout_;
  bool agree_before_collectives_ = false;
  std::vector<int64_t> worker_ranks_;
};

}  // namespace distsgd::comm
