#include "distsgd/algo/decentralized/gossip_worker.hpp"

#include "distsgd/comm/communicator.hpp"
#include "distsgd/optim/flat_parameters.hpp"

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace distsgd::algo::decentralized {

GossipWorker::GossipWorker(const WorkerSetup& s)
    : flat_(s.flat),
      timeline_(s.timeline),
      rank_(s.comm->rank()),
      workers_(s.comm->workers()),
      seed_(s.config.seed),
      liveness_(s.comm->liveness()),
      optimizer_(optim::make_worker_optimizer(s.config, s.flat.numel())),
      initial_sum_(s.flat.params().sum(at::kDouble).item<double>()) {}

EndpointOptions GossipWorker::endpoint_options(const WorkerSetup& s, topology::Topology topology) {
  EndpointOptions e;
  e.numel = s.flat.numel();
  e.contacts = out_neighbors(topology, s.comm->rank(), s.comm->workers());
  e.listeners = in_neighbors(topology, s.comm->rank(), s.comm->workers());
  e.test_delay_ms = kTestDelayMs.of(s.config);
  e.seed = s.config.seed * 131 + static_cast<uint64_t>(s.comm->rank());
  return e;
}

int64_t GossipWorker::live_peer(topology::Topology topology, int64_t step) const {
  return topology::live_peer_at(topology, rank_, workers_, step, seed_, [this](int64_t r) { return is_lost(r); });
}

bool GossipWorker::is_lost(int64_t rank) const { return liveness_ != nullptr && liveness_->is_lost(rank); }

void GossipWorker::finish_endpoint(GossipEndpoint& endpoint) {
  waiting_.start();
  endpoint.finish();
  waiting_.stop();
}

AlgorithmStats GossipWorker::stats() const {
  AlgorithmStats s;
  s.communication_wait_seconds = waiting_.total();
  s.update_seconds = update_.total();
  s.bytes_sent = endpoint().bytes_sent();
  s.per_worker_values = figures();
  const MessageAges ages = endpoint().ages();
  s.per_worker_values.insert(s.per_worker_values.end(), {{"merged_models", static_cast<double>(ages.count)},
                                                         {"staleness_mean", ages.mean()},
                                                         {"staleness_max", static_cast<double>(ages.max)}});
  return s;
}

void GossipWorker::add_to_summary(nlohmann::json& summary, const std::vector<nlohmann::json>&) {
  // Over every merge of every worker, as a parameter-server run's staleness is over every applied gradient.
  double merged = 0, age_sum = 0, age_max = 0;
  for (const auto& worker : summary["per_worker"]) {
    const double count = worker["merged_models"].get<double>();
    merged += count;
    age_sum += count * worker["staleness_mean"].get<double>();
    age_max = std::max(age_max, worker["staleness_max"].get<double>());
  }
  summary["staleness_mean"] = merged > 0 ? age_sum / merged : 0.0;
  summary["staleness_max"] = static_cast<int64_t>(age_max);
}

}  // namespace distsgd::algo::decentralized
