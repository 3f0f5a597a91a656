// A parameter-server shard: its slice of x~ and one handler thread per worker, each receiving that worker's
// requests and passing them to the algorithm's handler (ps-lite / MXNet KVStore style: the update rule is
// pluggable, the serving loop is shared). serve() returns when every worker has sent kDone; an error in any
// handler (a worker died, a timeout) stops the shard and is rethrown by serve().
#pragma once
#include "distsgd/algo/ps/protocol.hpp"

#include <ATen/core/Tensor.h>

#include <functional>
#include <mutex>

namespace distsgd::algo::ps {

class ShardServer;

// What a handler may do with the current request of one worker.
class WorkerChannel {
 public:
  WorkerChannel(ShardServer& server, int64_t worker);
  int64_t worker() const { return worker_; }
  // Receives the request's payload (shard-sized) into a per-worker buffer and returns it.
  at::Tensor& receive_payload();
  // Sends a shard-sized tensor back to the worker and waits until it is sent.
  void reply(const at::Tensor& values);

 private:
  ShardServer& server_;
  int64_t worker_;
  at::Tensor payload_;
};

class ShardServer {
 public:
  using Handler = std::function<void(const Request&, WorkerChannel&)>;

  // Takes this shard's slice of `initial` (the whole flat parameter vector) as its starting x~.
  ShardServer(comm::Communicator& comm, int64_t shard, ShardRange range, const at::Tensor& initial);

  // Runs one handler thread per worker until all are done. `handle` is called for every request but kDone,
  // concurrently from the worker threads: it must do its own locking (mutex() is there for that).
  void serve(const Handler& handle);

  at::Tensor& parameters() { return parameters_; }  // x~ of this shard
  std::mutex& mutex() { return mutex_; }
  int64_t workers() const;
  const ShardRange& range() const { return range_; }
  comm::Communicator& comm() { return comm_; }

 private:
  comm::Communicator& comm_;
  int64_t shard_;
  ShardRange range_;
  at::Tensor parameters_;
  std::mutex mutex_;
};

}  // namespace distsgd::algo::ps
