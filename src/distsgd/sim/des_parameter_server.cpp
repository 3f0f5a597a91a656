#include "distsgd/sim/des_parameter_server.hpp"

#include <memory>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {

std::vector<double> shard_bytes(const ModelProfile& profile, int64_t servers, const std::string& sharding) {
  require(servers >= 1, "--servers must be at least 1");
  const double per_parameter = static_cast<double>(profile.bytes_per_parameter);
  std::vector<int64_t> numel;
  for (const auto& t : profile.tensors) numel.push_back(t.parameters);
  int64_t total = 0;
  for (const int64_t n : numel) total += n;
  std::vector<double> bytes;
  if (sharding == "memory") {
    for (int64_t k = 0; k < servers; ++k) {
      bytes.push_back(per_parameter * static_cast<double>(total * (k + 1) / servers - total * k / servers));
    }
    return bytes;
  }
  require(sharding == "layer", "--sharding must be memory or layer (got '" + sharding + "')");
  require(static_cast<int64_t>(numel.size()) >= servers,
          "--sharding layer: the model has " + std::to_string(numel.size()) + " tensors, fewer than --servers " +
              std::to_string(servers) + " (use --sharding memory)");
  // As algo/ps/shard_layout.cpp: at least one tensor per shard; stop at the
  // boundary, keeping one tensor for every later shard.
  size_t next = 0;
  int64_t offset = 0;
  for (int64_t k = 0; k < servers; ++k) {
    const int64_t boundary = total * (k + 1) / servers;
    const size_t left_for_others = static_cast<size_t>(servers - k - 1);
    int64_t shard = 0;
    do {
      shard += numel[next];
      offset += numel[next];
      ++next;
    } while (next < numel.size() - left_for_others && (k == servers - 1 || offset + numel[next] / 2 <= boundary));
    bytes.push_back(per_parameter * static_cast<double>(shard));
  }
  return bytes;
}

ShardedClient::ShardedClient(DesContext& context)
    : c_(context),
      shards_(shard_bytes(context.profile, context.servers, context.settings.sharding)),
      replies_(static_cast<size_t>(context.workers)),
      version_(static_cast<size_t>(context.workers), 0) {}

void ShardedClient::send_to_all(int64_t worker, const std::vector<double>& bytes,
                                std::function<void(int64_t)> at_server, Next sent) {
  auto left = std::make_shared<int64_t>(count());
  auto shared_sent = std::make_shared<Next>(std::move(sent));
  auto shared_at_server = std::make_shared<std::function<void(int64_t)>>(std::move(at_server));
  for (int64_t s = 0; s < count(); ++s) {
    c_.send_to_server(worker, s, bytes[static_cast<size_t>(s)], [s, left, shared_sent, shared_at_server] {
      if (*shared_at_server) (*shared_at_server)(s);
      if (--*left == 0 && *shared_sent) (*shared_sent)();
    });
  }
}

void ShardedClient::expect_replies(int64_t worker, Next then) {
  Pending& p = replies_[static_cast<size_t>(worker)];
  require(p.left == 0, "simulator: a worker waits for two sets of replies at once");
  p.left = count();
  p.then = std::move(then);
}

void ShardedClient::reply(int64_t shard, int64_t worker, int64_t version) {
  c_.send_to_worker(shard, worker, shards_[static_cast<size_t>(shard)], [this, shard, worker, version] {
    if (shard == 0) version_[static_cast<size_t>(worker)] = version;
    Pending& p = replies_[static_cast<size_t>(worker)];
    if (--p.left > 0) return;
    Next then = std::move(p.then);
    p.then = nullptr;
    then();
  });
}

}  // namespace distsgd::sim
