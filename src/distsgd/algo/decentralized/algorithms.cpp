// The decentralized algorithms as registered names: each is a short combination of a topology, a mixing rule
// and a protocol (spec: GoSGD, Gossiping SGD, AD-PSGD, SGP).
#include "distsgd/algo/decentralized/adpsgd.hpp"
#include "distsgd/algo/decentralized/pull_gossip.hpp"
#include "distsgd/algo/decentralized/push_gossip.hpp"

namespace distsgd::algo {

using decentralized::PushGossipOptions;
using decentralized::Topology;

AlgorithmInfo gosgd_algorithm() {
  AlgorithmInfo info;
  info.name = "gosgd";
  info.description = "GoSGD: with probability --gossip-prob push (x, w/2) to a random peer; weighted merge";
  info.decentralized = true;
  info.make_worker = [](const WorkerSetup& s) {
    return decentralized::make_push_gossip(s, PushGossipOptions{Topology::kRandom, s.config.gossip_prob, -1});
  };
  return info;
}

AlgorithmInfo gossip_algorithm() {
  AlgorithmInfo info;
  info.name = "gossip";
  info.description = "gossiping SGD (--gossip-mode pull: average with a random peer's model; push: push-sum)";
  info.decentralized = true;
  info.make_worker = [](const WorkerSetup& s) {
    if (s.config.gossip_mode == "pull") return decentralized::make_pull_gossip(s);
    return decentralized::make_push_gossip(s, PushGossipOptions{Topology::kRandom, 1.0, -1});
  };
  return info;
}

AlgorithmInfo adpsgd_algorithm() {
  AlgorithmInfo info;
  info.name = "adpsgd";
  info.description = "AD-PSGD: odd ranks average with even ranks (bipartite exponential graph), async";
  info.decentralized = true;
  info.make_worker = [](const WorkerSetup& s) { return decentralized::make_adpsgd(s); };
  return info;
}

AlgorithmInfo sgp_algorithm() {
  AlgorithmInfo info;
  info.name = "sgp";
  info.description = "stochastic gradient push on the directed exponential graph (--sgp-overlap)";
  info.decentralized = true;
  info.make_worker = [](const WorkerSetup& s) {
    return decentralized::make_push_gossip(s,
                                           PushGossipOptions{Topology::kExponential, 1.0, s.config.sgp_overlap});
  };
  return info;
}

}  // namespace distsgd::algo
