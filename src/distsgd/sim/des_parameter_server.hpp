// The parameter-server substrate of the discrete-event simulator (algo/ps/):
// the model cut into S shards (shard_layout.cpp: memory = equal contiguous
// ranges, layer = whole tensors cut where the running size passes each k/S), a
// worker's request to every shard at once (PsClient::send_to_all: one message
// per shard, all in flight together), and the replies it waits for
// (receive_from_all).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "distsgd/sim/des_context.hpp"

namespace distsgd::sim {

// Bytes of each shard's slice of the model.
std::vector<double> shard_bytes(const ModelProfile& profile, int64_t servers, const std::string& sharding);

class ShardedClient {
 public:
  explicit ShardedClient(DesContext& context);

  const std::vector<double>& shards() const { return shards_; }
  int64_t count() const { return static_cast<int64_t>(shards_.size()); }

  // Sends bytes[s] to every shard s at once; `at_server(s)` runs when shard s
  // has the message, `sent` (optional) when every message has arrived (a
  // blocking send returns).
  void send_to_all(int64_t worker, const std::vector<double>& bytes, std::function<void(int64_t)> at_server,
                   Next sent = nullptr);
  // The worker now waits for one reply from every shard; `then` runs when the
  // last has arrived.
  void expect_replies(int64_t worker, Next then);
  // Shard s replies to the worker with its slice; `version` is what the reply
  // carries (shard 0's becomes the worker's version, as PsWorker::receive
  // does).
  void reply(int64_t shard, int64_t worker, int64_t version);
  int64_t version(int64_t worker) const { return version_[static_cast<size_t>(worker)]; }

 private:
  struct Pending {
    int64_t left = 0;
    Next then;
  };
  DesContext& c_;
  std::vector<double> shards_;
  std::vector<Pending> replies_;  // per worker
  std::vector<int64_t> version_;  // per worker
};

}  // namespace distsgd::sim
