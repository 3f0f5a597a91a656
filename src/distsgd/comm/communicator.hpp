// All communication of a distributed run: one Gloo process group over the world (workers and servers, for
// point-to-point parameter-server traffic) and one over the workers only (for collectives). Nothing outside comm/
// includes c10d, so moving to another libtorch touches this folder only.
#pragma once
#include "distsgd/comm/liveness.hpp"
#include "distsgd/comm/process_env.hpp"

#include <ATen/core/Tensor.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace c10d {
class Work;
}

namespace distsgd::comm {

// Handle of an operation in flight. wait() throws distsgd::Error naming the operation when it failed or timed out.
class Work {
 public:
  Work() = default;
  void wait();
  bool done() const { return !impl_; }  // true once waited (or never started)
  // Runs callback (on a communication thread) when the operation completes; at once if it already has.
  void on_complete(std::function<void()> callback);

  struct Impl;
  explicit Work(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  Impl* impl() { return impl_.get(); }

 private:
  std::shared_ptr<Impl> impl_;
};

class Communicator {
 public:
  // Connects to the rendezvous store (hosting it when this is rank 0 and no launcher does) and creates the
  // process groups. Ranks [0, workers) are workers, the rest servers. Every operation is bounded by `timeout`.
  Communicator(const ProcessEnv& env, int64_t workers, std::chrono::milliseconds timeout);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int64_t rank() const { return rank_; }
  int64_t world_size() const { return world_size_; }
  int64_t workers() const { return workers_; }
  int64_t servers() const { return world_size_ - workers_; }
  bool is_worker() const { return rank_ < workers_; }

  // Collectives among the workers in the current group (worker_index() is this worker's place in it, worker 0 is
  // always index 0). Tensors must stay alive until the work is waited.
  Work allreduce_sum(at::Tensor tensor);
  // Equal splits: slice j of `input` goes to worker j; slice i of `output` comes from worker i.
  Work alltoall(at::Tensor output, at::Tensor input);
  // outputs[i] receives worker i's `input`.
  Work allgather(std::vector<at::Tensor> outputs, at::Tensor input);
  Work broadcast(at::Tensor tensor, int64_t root);
  void barrier_workers();

  // Point to point over the world group, with a tag per message kind.
  Work send(at::Tensor tensor, int64_t destination, int64_t tag);
  Work receive(at::Tensor tensor, int64_t source, int64_t tag);
  void barrier_world();

  // Small values through the rendezvous store (e.g. announcing results).
  void store_set(const std::string& key, const std::string& value);
  std::string store_get(const std::string& key);  // waits up to the timeout
  bool store_has(const std::string& key);         // does not wait

  std::chrono::milliseconds timeout() const { return timeout_; }

  // Starts watching every process of the run (liveness.hpp); null until then.
  void start_liveness(LivenessOptions options);
  Liveness* liveness() { return liveness_.get(); }

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

 private:
  void agree_now();
  bool key_or_loss(const std::string& key, int64_t worker, std::chrono::steady_clock::time_point deadline);
  Work point_to_point(at::Tensor tensor, int64_t peer, int64_t tag, bool sending);
  Work among_survivors(at::Tensor tensor, const std::string& what,
                       const std::function<c10::intrusive_ptr<c10d::Work>(std::vector<at::Tensor>&)>& start);
  struct Groups;
  std::unique_ptr<Groups> groups_;
  ProcessEnv env_;
  int64_t rank_, world_size_, workers_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<Liveness> liveness_;
  bool agree_before_collectives_ = false;
  int64_t agreements_ = 0;
  std::vector<int64_t> worker_ranks_;
};

}  // namespace distsgd::comm
