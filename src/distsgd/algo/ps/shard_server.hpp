// A parameter-server shard: its slice of x~ and one handler thread per worker, each receiving that worker's
// requests and passing them to the algorithm's handler (ps-lite / MXNet KVStore style: the update rule is
// pluggable, the serving loop is shared). Evaluation pulls (kPull with clock < 0) are answered here for every
// algorithm. serve() returns when every worker has sent kDone or was lost; an error in any other handler (a worker
// died in a run that cannot go on without it, a timeout) ends the process with a message (other handlers may be
// blocked on workers that will never answer).
// For tests and experiments, DISTSGD_SERVER_DELAY_MS=T makes every shard sleep T ms before taking each request's
// payload (a busy or slow server: the worker's send cannot complete before the shard posts its receive).
#pragma once
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/algo/ps/protocol.hpp"
#include "distsgd/core/runtime.hpp"

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <mutex>

namespace distsgd::optim {
class MomentumSgd;
}

namespace distsgd::algo::ps {

class ShardServer;

// What a handler may do with the current request of one worker.
class WorkerChannel {
 public:
  WorkerChannel(ShardServer& server, int64_t worker);
  int64_t worker() const { return worker_; }
  // Inside a virtual cluster a payload received is then processed for the device's optimizer pass over it
  // (ShardServer::spend_update), unless the algorithm charges its update itself (kByAlgorithm: BSP updates
  // once per round, not per push).
  enum class Processing { kPerPayload, kByAlgorithm };
  // Receives the request's payload (shard-sized) into a per-worker buffer and returns it.
  at::Tensor& receive_payload();
  // Receives a gradient into the same buffer and returns the part it covers: a dense piece (request.offset,
  // request.numel; wait-free backprop sends a shard's gradient in several) or a compressed gradient
  // (request.entries) as the whole shard, dense.
  at::Tensor receive_gradient(const Request& request, Processing processing = Processing::kPerPayload);
  // Whether the gradient just received completed this worker's gradient of the shard (its last piece).
  bool gradient_complete() const { return gradient_complete_; }
  // Sends header and values (the request's piece, or the shard) as the reply; waits until sent.
  void reply(const at::Tensor& values, const Reply& header);
  // Copies x~ under the shard's lock and replies with it and the current version.
  void reply_with_parameters();
  // A server-initiated message on the push tags (ALADDIN); waits until sent.
  void push(const at::Tensor& values, const Reply& header);
  // A per-worker buffer of the shard's size, for replies assembled under the lock.
  at::Tensor& reply_buffer() { return reply_buffer_; }

 private:
  ShardServer& server_;
  int64_t worker_;
  at::Tensor payload_;
  at::Tensor reply_buffer_;
  int64_t gradient_received_ = 0;  // elements of the current gradient received so far
  bool gradient_complete_ = false;
};

class ShardServer {
 public:
  using Handler = std::function<void(const Request&, WorkerChannel&)>;
  using DoneHandler = std::function<void(WorkerChannel&)>;
  using LostHandler = std::function<void(int64_t worker)>;

  // Takes this shard's slice of `initial` (the whole flat parameter vector) as its starting x~.
  ShardServer(comm::Communicator& comm, int64_t shard, ShardRange range, const at::Tensor& initial);
  // The shard a server process serves: its range of the layout the workers cut from the same model.
  explicit ShardServer(const ServerSetup& setup);

  // Runs one handler thread per worker until all are done. `handle` is called for every request but kDone and
  // evaluation pulls, concurrently from the worker threads: it does its own locking (mutex() is there for that).
  // `on_done` (optional) runs when a worker says kDone, before its thread ends. A worker whose messages fail and
  // that is then declared lost (comm/liveness.hpp; --on-worker-loss continue) is dropped: its thread ends, `on_lost`
  // (optional) runs, and the others are served on.
  void serve(const Handler& handle, const DoneHandler& on_done = nullptr, const LostHandler& on_lost = nullptr);

  at::Tensor& parameters() { return parameters_; }  // x~ of this shard
  std::mutex& mutex() { return mutex_; }
  int64_t workers() const;
  int64_t shard() const { return shard_; }
  const ShardRange& range() const { return range_; }
  comm::Communicator& comm() { return comm_; }
  // Inside a virtual cluster: an update over `numel` values costs the device's optimizer pass over them, one at a
  // time per server (as the DES's server resource); nothing in a real run. Not under mutex(): it yields. Called for
  // every payload received (WorkerChannel), or by an algorithm that charges its own update.
  void spend_update(int64_t numel);
  // Inside a virtual cluster: the server's processing of what a worker sent (the cluster's cost per message and per
  // byte), on the same compute; called for every request header and every payload received.
  void spend_processing(double requests, double bytes);

  // Under mutex(): the number of updates applied to x~, and the staleness of the gradient just applied.
  int64_t version() const { return version_; }
  void count_update() { ++version_; }
  void record_staleness(int64_t staleness);
  // Checkpoints, under mutex(): x~ of this shard ("shard_parameters"), its version, and the momentum of the
  // server's optimizer when it has one ("server_momentum").
  void save_state(AlgorithmState& state, optim::MomentumSgd* optimizer = nullptr) const;
  void load_state(const AlgorithmState& state, optim::MomentumSgd* optimizer = nullptr);

  // Figures for summary.json (what a server's serve() returns): staleness (mean, max), updates, plus what the
  // algorithm adds to extra().
  nlohmann::json statistics();
  nlohmann::json& extra() { return extra_; }

 private:
  comm::Communicator& comm_;
  int64_t shard_;
  ShardRange range_;
  at::Tensor parameters_;
  std::mutex mutex_;
  int64_t version_ = 0;
  double staleness_sum_ = 0;
  int64_t staleness_count_ = 0, staleness_max_ = 0;
  nlohmann::json extra_ = nlohmann::json::object();
  double payload_delay_seconds_ = 0;  // DISTSGD_SERVER_DELAY_MS
  void delay_payload() const;
  void spend_on_compute(double seconds);  // one at a time per server (virtual clusters only)
  std::mutex compute_mutex_;
  runtime::Condition compute_free_;
  bool computing_ = false;

  friend class WorkerChannel;
};

}  // namespace distsgd::algo::ps
