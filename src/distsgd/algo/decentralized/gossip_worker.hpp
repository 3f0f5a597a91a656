// What the gossip workers (push gossip: GoSGD, gossiping SGD push, SGP; pull gossip; AD-PSGD) share: the
// worker's place among its peers, its local optimizer (--optimizer), the endpoint options over its topology, the
// timed communication and update phases, and the figures every one reports. Each worker keeps its own
// GossipEndpoint as its last member (its receiving threads start once everything they use exists).
#pragma once
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/algo/decentralized/protocol.hpp"
#include "distsgd/core/peer_topology.hpp"
#include "distsgd/core/timer.hpp"
#include "distsgd/optim/worker_optimizer.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace distsgd::algo::decentralized {

class GossipWorker : public WorkerAlgorithm {
 public:
  AlgorithmStats stats() const override;
  // staleness_mean and staleness_max over every merge of every worker (from per_worker's figures).
  void add_to_summary(nlohmann::json& summary, const std::vector<nlohmann::json>& server_statistics) override;
  optim::WorkerOptimizer* worker_optimizer() override { return optimizer_.get(); }

 protected:
  explicit GossipWorker(const WorkerSetup& setup);

  // The endpoint of this worker on `topology`: whom it contacts, who contacts it.
  static EndpointOptions endpoint_options(const WorkerSetup& setup, topology::Topology topology);
  virtual const GossipEndpoint& endpoint() const = 0;
  // This worker's own figures for summary.json's per_worker (the same names on every worker).
  virtual std::vector<std::pair<std::string, double>> figures() const = 0;
  // Tells the peers this worker is done and waits until they are (timed as communication wait).
  void finish_endpoint(GossipEndpoint& endpoint);
  // This worker's peer at iteration `step` on `topology`, skipping the peers declared lost (-1: none is left).
  int64_t live_peer(topology::Topology topology, int64_t step) const;
  bool is_lost(int64_t rank) const;

  optim::FlatParameters& flat_;
  Timeline& timeline_;
  int64_t rank_, workers_;
  uint64_t seed_;
  const comm::Liveness* liveness_;                     // null: a run that stops at any loss (or has no liveness)
  std::unique_ptr<optim::WorkerOptimizer> optimizer_;  // its state lives here, local to the worker
  double initial_sum_;                                 // sum of the starting parameters (conservation checks with lr 0)
  Stopwatch waiting_, update_;
};

}  // namespace distsgd::algo::decentralized
