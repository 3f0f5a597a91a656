// All communication of a distributed run: one Gloo process group over the world (workers and servers, for
// point-to-point parameter-server traffic) and one over the workers only (for collectives). Nothing outside comm/
// includes c10d, so moving to another libtorch touches this folder only.
#pragma once
#include "distsgd/comm/process_env.hpp"

#include <ATen/core/Tensor.h>

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

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

  // Collectives among the workers (rank = worker index). Tensors must stay alive until the work is waited.
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

 private:
  struct Groups;
  std::unique_ptr<Groups> groups_;
  int64_t rank_, world_size_, workers_;
  std::chrono::milliseconds timeout_;
};

}  // namespace distsgd::comm
