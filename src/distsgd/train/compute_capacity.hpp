// How much compute a host gives ranks that compute at once (issue 25): on a host whose cores the ranks share (distsgd
// validate's runs, an emulated cluster), the simulator shares `shared_cores` among the ranks computing, and nproc is
// not quite what they get. Measured on this host (2 vCPUs), lenet5 at batch 32: four ranks together complete what
// 1.83-1.89 cores would, eight 1.79 (bench/README, session 39).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "distsgd/core/config.hpp"

namespace distsgd::train {

struct ComputeCapacity {
  int64_t ranks = 0;            // computing at once
  double alone_seconds = 0;     // a forward + backward of one of them computing alone (the windows' mean)
  double together_seconds = 0;  // the same while all of them compute: the window x ranks / iterations completed
  // ranks x alone / together, within [1, min(ranks, host_cores())]: the cores' worth they get
  // (ClusterDescription::shared_cores).
  double cores = 0;
};

// Counts the forward + backward iterations of config's model on its data (one thread each, as a run's ranks with
// --threads 1, each on a model of its own) that `ranks` threads complete together in a window of about `repeats`
// iterations each, against one thread alone in windows before and after. Throws Error for fewer than 2 ranks or 3
// repeats.
ComputeCapacity measure_compute_capacity(const TrainConfig& config, int64_t ranks, int64_t repeats);

// A profile's "compute_capacity" entry, and the line profile prints for it.
nlohmann::json compute_capacity_json(const ComputeCapacity& capacity);
std::string compute_capacity_text(const ComputeCapacity& capacity);

}  // namespace distsgd::train
