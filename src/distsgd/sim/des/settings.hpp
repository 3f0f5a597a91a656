// What one discrete-event simulation runs: the algorithm with its flags, the run's length, the loader's prefetch
// depth and how collectives are simulated (sim/algorithm_settings.hpp), and the worker count, the buckets in bytes,
// compression, the seed, heterogeneity and the trace.
#pragma once
#include <cstdint>
#include <string>

#include "distsgd/sim/algorithm_settings.hpp"
#include "distsgd/sim/platform/heterogeneity.hpp"

namespace distsgd::sim {

struct DesSettings : AlgorithmSettings {
  int64_t workers = 4;
  // arsgd's buckets
  double bucket_bytes = 25.0 * 1024 * 1024;
  double first_bucket_bytes = 1.0 * 1024 * 1024;
  // Deep Gradient Compression of the gradient uplink (arsgd, bsp, asp, ssp): the fraction of each tensor sent (after
  // the warm-up); 0: dense.
  double density = 0;
  // PowerSGD on arsgd (sim/analytical/powersgd_model.hpp): the rank (0: off).
  int64_t powersgd_rank = 0;
  uint64_t seed = 1;
  Heterogeneity heterogeneity;
  std::string trace_path;  // a Chrome trace of the run is written here (none when empty)
};

// Throws Error (naming the flag) for a setting out of range or not applicable to the algorithm.
void check(const DesSettings& settings);

}  // namespace distsgd::sim
