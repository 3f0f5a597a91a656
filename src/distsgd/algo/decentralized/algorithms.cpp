// The decentralized algorithms as registered names: each is a short combination of a topology, a mixing rule
// and a protocol (spec: GoSGD, Gossiping SGD, AD-PSGD, SGP).
#include "distsgd/algo/decentralized/adpsgd.hpp"
#include "distsgd/algo/decentralized/protocol.hpp"
#include "distsgd/algo/decentralized/pull_gossip.hpp"
#include "distsgd/algo/decentralized/push_gossip.hpp"
#include "distsgd/catalog/algorithm_options.hpp"
#include "distsgd/core/peer_topology.hpp"

namespace distsgd::algo {

using decentralized::kTestDelayMs;
using decentralized::PushGossipOptions;
using topology::Topology;

namespace {

using catalog::choices::GossipMode;

const StoredOption<double> kGossipProb = catalog::options::stored_option(catalog::options::kGossipProbability);
const StoredOption<GossipMode> kGossipMode = catalog::options::stored_option(catalog::options::kGossipMode);
const StoredOption<int64_t> kSgpOverlap = catalog::options::stored_option(catalog::options::kSgpOverlap);

}  // namespace

AlgorithmInfo gosgd_algorithm() {
  AlgorithmInfo info;
  info.name = "gosgd";
  info.description = "GoSGD: with probability --gossip-prob push (x, w/2) to a random peer; weighted merge";
  info.decentralized = true;
  info.takes_optimizer = true;       // each worker steps its own model
  info.independent_workers = true;   // no step waits for a peer: a push is not awaited
  info.survives_worker_loss = true;  // peers stop choosing a lost worker (protocol.hpp)
  info.options = {&kGossipProb.spec(), &kTestDelayMs.spec()};
  info.make_worker = [](const WorkerSetup& s) {
    return decentralized::make_push_gossip(s, PushGossipOptions{Topology::kRandom, kGossipProb.of(s.config), -1});
  };
  return info;
}

AlgorithmInfo gossip_algorithm() {
  AlgorithmInfo info;
  info.name = "gossip";
  info.description = "gossiping SGD (--gossip-mode pull: average with a random peer's model; push: push-sum)";
  info.decentralized = true;
  info.takes_optimizer = true;       // each worker steps its own model
  info.independent_workers = true;   // a pull is answered by the peer's serving thread, whatever its step
  info.survives_worker_loss = true;  // peers stop choosing a lost worker (protocol.hpp)
  info.options = {&kGossipMode.spec(), &kTestDelayMs.spec()};
  info.make_worker = [](const WorkerSetup& s) {
    if (kGossipMode.of(s.config) == GossipMode::kPull) return decentralized::make_pull_gossip(s);
    return decentralized::make_push_gossip(s, PushGossipOptions{Topology::kRandom, 1.0, -1});
  };
  return info;
}

AlgorithmInfo adpsgd_algorithm() {
  AlgorithmInfo info;
  info.name = "adpsgd";
  info.description = "AD-PSGD: odd ranks average with even ranks (bipartite exponential graph), async";
  info.decentralized = true;
  info.takes_optimizer = true;       // each worker steps its own model
  info.independent_workers = true;   // the passive side's thread answers an exchange, whatever its step
  info.survives_worker_loss = true;  // peers stop choosing a lost worker (protocol.hpp)
  info.options = {&kTestDelayMs.spec()};
  info.make_worker = [](const WorkerSetup& s) { return decentralized::make_adpsgd(s); };
  return info;
}

AlgorithmInfo sgp_algorithm() {
  AlgorithmInfo info;
  info.name = "sgp";
  info.description = "stochastic gradient push on the directed exponential graph (--sgp-overlap)";
  info.decentralized = true;
  info.takes_optimizer = true;       // each worker steps its own model
  info.survives_worker_loss = true;  // peers stop choosing a lost worker (protocol.hpp)
  info.options = {&kSgpOverlap.spec(), &kTestDelayMs.spec()};
  info.make_worker = [](const WorkerSetup& s) {
    return decentralized::make_push_gossip(s, PushGossipOptions{Topology::kExponential, 1.0, kSgpOverlap.of(s.config)});
  };
  return info;
}

}  // namespace distsgd::algo
