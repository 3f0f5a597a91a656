// What one discrete-event simulation runs: the algorithm with its flags (named as in `distsgd train`), the run's length
// and seed, the data loader's prefetch depth, how collectives are simulated, heterogeneity, the trace.
#pragma once
#include <cstdint>
#include <string>

#include "distsgd/sim/platform/heterogeneity.hpp"

namespace distsgd::sim {

struct DesSettings {
  std::string algorithm = "arsgd";
  int64_t workers = 4;
  // arsgd
  std::string overlap = "wfbp";  // none | wfbp | multistep
  double bucket_bytes = 25.0 * 1024 * 1024;
  double first_bucket_bytes = 1.0 * 1024 * 1024;
  // Deep Gradient Compression of the gradient uplink (arsgd, bsp, asp, ssp): the fraction of each tensor sent (after
  // the warm-up); 0: dense.
  double density = 0;
  // PowerSGD on arsgd (sim/analytical/powersgd_model.hpp): the rank (0: off), and the plain steps before it starts.
  int64_t powersgd_rank = 0;
  int64_t powersgd_start = 10;
  // parameter-server algorithms
  int64_t servers = 1;
  std::string sharding = "memory";         // memory | layer
  std::string local_aggregation = "none";  // bsp: none | host
  int64_t staleness = 10;                  // ssp
  int64_t tau = 2;                         // easgd
  int64_t pi = 4;                          // aladdin
  std::string aladdin_variant = "full";    // full | l1 | l2
  // decentralized
  double gossip_probability = 0.01;  // gosgd
  std::string gossip_mode = "pull";  // gossip: pull | push
  int64_t sgp_overlap = 0;           // sgp: 0 | 1
  // the low-communication family (localsgd, slowmo, diloco; sim/analytical/outer_model.hpp)
  int64_t sync_every = 16;
  int64_t fragments = 1;
  int64_t fragment_delay = 0;
  int64_t outer_bits = 32;
  std::string slowmo_base = "localsgd";  // slowmo: localsgd | sgp

  int64_t iterations = 100;  // measured, per worker
  int64_t warmup = 10;       // run first, not measured
  uint64_t seed = 1;
  int64_t prefetch = 4;              // batches the loader prepares ahead (0: read on demand), as distsgd train
  std::string collectives = "auto";  // steps | flows | auto (steps up to 64 workers)
  Heterogeneity heterogeneity;
  std::string trace_path;  // a Chrome trace of the run is written here (none when empty)
};

// Throws Error (naming the flag) for a setting out of range or not applicable to the algorithm.
void check(const DesSettings& settings);

}  // namespace distsgd::sim
