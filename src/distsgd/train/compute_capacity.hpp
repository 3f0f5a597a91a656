// How much compute a host gives ranks that compute at once (issue 25): on a host whose cores the ranks share (distsgd
// validate's runs, an emulated cluster), the simulator shares `shared_cores` among the ranks computing, and nproc is
// not what they get. Measured on this host (2 vCPUs), lenet5 at batch 32: two at once each step 1.3x as long as one
// alone, four at once 2.75x: the capacity of 1.5 cores, not 2 (bench/README, session 39).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "distsgd/core/config.hpp"

namespace distsgd::train {

struct ComputeCapacity {
  int64_t ranks = 0;            // computing at once
  double alone_seconds = 0;     // median forward + backward of one of them computing alone
  double together_seconds = 0;  // median forward + backward while all of them compute
  // ranks x alone / together, within [1, ranks]: the cores' worth they get (ClusterDescription::shared_cores).
  double cores = 0;
};

// Times `repeats` forward + backward iterations of config's model on its data (one thread each, as a run's ranks
// with --threads 1) in one thread alone, then in `ranks` threads started together, each on a model of its own.
// Throws Error for fewer than 2 ranks or 3 repeats.
ComputeCapacity measure_compute_capacity(const TrainConfig& config, int64_t ranks, int64_t repeats);

// A profile's "compute_capacity" entry, and the line profile prints for it.
nlohmann::json compute_capacity_json(const ComputeCapacity& capacity);
std::string compute_capacity_text(const ComputeCapacity& capacity);

}  // namespace distsgd::train
