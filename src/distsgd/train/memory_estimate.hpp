// How much memory a run needs, estimated before it starts, for real (multi-process) and virtual runs from the same
// pieces: a worker's and a server's training state from the model's size, the dataset, and libtorch's own baseline.
#pragma once
#include "distsgd/core/config.hpp"

#include <cstdint>
#include <string>

namespace distsgd::train {

// A worker's training state: parameters, gradients, momentum, and as much again in messages and the algorithm's
// copies (a gossip model, a server's reply); autograd's activations for a batch of `sample_values` floats per
// sample; its thread.
double worker_state_bytes(const TrainConfig& config, int64_t parameters, int64_t sample_values);
// A server's: its model (the layout), its shard, its optimizer state, and per worker a payload and reply buffer of
// its shard and a handler thread.
double server_state_bytes(const TrainConfig& config, int64_t parameters);

// Bytes a virtual run of `parameters` per model needs (every worker's and server's state, all in one process),
// beside one shared copy of the dataset.
double virtual_memory_estimate(const TrainConfig& config, int64_t parameters, int64_t sample_values);

// A real run of config.workers + config.servers processes on this host.
struct ProcessesMemory {
  double per_worker = 0;  // libtorch's private baseline, the state, and the dataset unless it is shared
  double per_server = 0;  // the same without any dataset (servers do not load it)
  double shared = 0;      // held once on the host: libtorch's code, and the dataset's cache file when shared
  double total = 0;
};
ProcessesMemory processes_memory_estimate(const TrainConfig& config, int64_t parameters, int64_t sample_values,
                                          double dataset_bytes, bool dataset_shared);

// MemAvailable of /proc/meminfo, in bytes; 0 when unknown.
double available_memory_bytes();
// "1.23 GB".
std::string gigabytes(double bytes);
// Whether `needed` bytes leave a margin of the `available` ones (which 0, unknown, always fits).
bool fits_in_memory(double needed, double available);

}  // namespace distsgd::train
