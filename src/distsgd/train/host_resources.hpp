// Before the processes of a run start on this host (distsgd's launcher, on the host or on an emulated cluster): what
// they will take of its memory and cores. A run that cannot fit is refused before anything starts (500 workers used
// to start every process and end killed by the kernel's OOM killer, without a message); one that shares the cores
// thinner than one thread each runs, with a warning saying by how much.
#pragma once
#include "distsgd/core/config.hpp"

#include <cstdint>
#include <string>

namespace distsgd::train {

// Call it while this process runs no other thread (it may set DISTSGD_DATA_CACHE=off for the processes it starts).
// Loads the dataset through the host's shared cache (data/dataset_cache.hpp: the processes then only map it) and
// builds the model once to count its parameters; throws Error, one line naming the estimate and the available memory,
// when the processes would not fit (train/memory_estimate.hpp); prints oversubscription_warning when there is one.
void check_host_resources(const TrainConfig& config);

// "distsgd: warning: 5 processes x 1 compute thread = 5 threads on 2 cores (2.5x oversubscribed) ...", or "" when
// the threads fit the cores.
std::string oversubscription_warning(int64_t processes, int64_t threads_per_process, int64_t cores);

}  // namespace distsgd::train
