// An algorithm's settings as the simulator takes them, named and defaulted as in `distsgd train`, and the length of
// a discrete-event run: declared once here, and both what `distsgd simulate` is told (SimulatorSettings) and what
// one discrete-event run runs (DesSettings) are these plus what only each needs.
#pragma once
#include <cstdint>
#include <string>

#include "distsgd/catalog/algorithm_defaults.hpp"
#include "distsgd/core/enum_names.hpp"

namespace distsgd::sim {

struct AlgorithmSettings {
  std::string algorithm = "arsgd";
  // Names hold the words of catalog/algorithm_choices.hpp (--overlap also the analytical mgwfbp and merge-optimal).
  std::string overlap = distsgd::name_of(catalog::defaults::kOverlap);
  int64_t powersgd_start = catalog::defaults::kPowerSgdStart;
  // parameter-server algorithms
  int64_t servers = 1;
  std::string sharding = distsgd::name_of(catalog::defaults::kSharding);
  std::string local_aggregation = distsgd::name_of(catalog::defaults::kLocalAggregation);
  int64_t staleness = catalog::defaults::kStaleness;
  int64_t tau = catalog::defaults::kTau;
  int64_t pi = catalog::defaults::kPi;
  std::string aladdin_variant = distsgd::name_of(catalog::defaults::kAladdinVariant);
  // decentralized
  double gossip_probability = catalog::defaults::kGossipProbability;
  std::string gossip_mode = distsgd::name_of(catalog::defaults::kGossipMode);
  int64_t sgp_overlap = catalog::defaults::kSgpOverlap;
  // the low-communication family (localsgd, slowmo, diloco)
  int64_t sync_every = catalog::defaults::kSyncEvery;
  std::string slowmo_base = distsgd::name_of(catalog::defaults::kSlowMoBase);
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
