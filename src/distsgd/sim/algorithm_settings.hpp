// An algorithm's settings as the simulator takes them, named and defaulted as in `distsgd train`, and the length of
// a discrete-event run: declared once here, and both what `distsgd simulate` is told (SimulatorSettings) and what
// one discrete-event run runs (DesSettings) are these plus what only each needs.
#pragma once
#include <cstdint>
#include <string>

#include "distsgd/catalog/algorithm_defaults.hpp"

namespace distsgd::sim {

struct AlgorithmSettings {
  std::string algorithm = "arsgd";
  std::string overlap = "wfbp";  // arsgd: none, wfbp, mgwfbp, merge-optimal or multistep (des: none, wfbp, multistep)
  int64_t powersgd_start = 10;   // powersgd: plain allreduce steps before compression
  // parameter-server algorithms
  int64_t servers = 1;
  std::string sharding = "memory";         // memory | layer
  std::string local_aggregation = "none";  // bsp: none | host
  int64_t staleness = catalog::defaults::kStaleness;
  int64_t tau = catalog::defaults::kTau;
  int64_t pi = catalog::defaults::kPi;
  std::string aladdin_variant = "full";  // full | l1 | l2
  // decentralized
  double gossip_probability = catalog::defaults::kGossipProbability;
  std::string gossip_mode = "pull";  // gossip: pull | push
  int64_t sgp_overlap = catalog::defaults::kSgpOverlap;
  // the low-communication family (localsgd, slowmo, diloco)
  int64_t sync_every = catalog::defaults::kSyncEvery;
  std::string slowmo_base = "localsgd";  // slowmo: localsgd | sgp
  int64_t fragments = catalog::defaults::kFragments;
  int64_t fragment_delay = catalog::defaults::kFragmentDelay;
  int64_t outer_bits = catalog::defaults::kOuterBits;
  // a discrete-event run
  int64_t iterations = 100;          // measured, per worker
  int64_t warmup = 10;               // run first, not measured
  int64_t prefetch = 4;              // batches the loader prepares ahead (0: read on demand), as distsgd train
  std::string collectives = "auto";  // steps | flows | auto (steps up to 64 workers)
};

}  // namespace distsgd::sim
