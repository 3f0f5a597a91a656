#include "distsgd/train/memory_estimate.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace distsgd::train {
namespace {

// Each thread's touched stack and libtorch's per-thread state. Calibrated on ASP with 1,024 workers and 8 servers
// (9,216 actors, lenet5): 5.8 GB measured, 7.0 GB estimated with this figure (bench/README).
constexpr double kThreadBytes = 0.5e6;
// A process's private memory once libtorch, Gloo and the run's bookkeeping are up: the server of a 4-worker ASP run
// of lenet5 on Fashion-MNIST holds 64 MB of anonymous memory, its workers 66 MB (bench/README, "Memory of a run").
constexpr double kProcessBaselineBytes = 60e6;
// libtorch's and its libraries' code as mapped: 85-100 MB of file pages per process, the same pages in every one.
constexpr double kLibraryBytes = 100e6;
// Keep this share of the available memory free: the page cache, the launcher, and whatever else runs here.
constexpr double kUsableShare = 0.9;

}  // namespace

double worker_state_bytes(const TrainConfig& c, int64_t parameters, int64_t sample_values) {
  const double model = 4.0 * static_cast<double>(parameters);
  // Activations: about 8 values kept per input value, as lenet5 and the resnets keep.
  return 6 * model + 8.0 * 4 * static_cast<double>(c.batch_size * sample_values) + kThreadBytes;
}

double server_state_bytes(const TrainConfig& c, int64_t parameters) {
  const double model = 4.0 * static_cast<double>(parameters);
  const double shard = model / static_cast<double>(std::max<int64_t>(c.servers, 1));
  return 3 * model + static_cast<double>(c.workers) * (2 * shard + kThreadBytes);
}

double virtual_memory_estimate(const TrainConfig& c, int64_t parameters, int64_t sample_values) {
  return static_cast<double>(c.workers) * worker_state_bytes(c, parameters, sample_values) +
         static_cast<double>(c.servers) * server_state_bytes(c, parameters);
}

ProcessesMemory processes_memory_estimate(const TrainConfig& c, int64_t parameters, int64_t sample_values,
                                          double dataset_bytes, bool dataset_shared) {
  ProcessesMemory m;
  // A private copy is decoded from the file's bytes, which it holds beside the tensors while it does.
  m.per_worker = kProcessBaselineBytes + worker_state_bytes(c, parameters, sample_values) +
                 (dataset_shared ? 0.0 : 2 * dataset_bytes);
  m.per_server = kProcessBaselineBytes + server_state_bytes(c, parameters);
  m.shared = kLibraryBytes + (dataset_shared ? dataset_bytes : 0.0);
  m.total = static_cast<double>(c.workers) * m.per_worker + static_cast<double>(c.servers) * m.per_server + m.shared;
  return m;
}

double available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kilobytes = 0;
  std::string unit;
  while (meminfo >> key >> kilobytes >> unit) {
    if (key == "MemAvailable:") return kilobytes * 1024;
  }
  return 0;
}

std::string gigabytes(double bytes) {
  std::ostringstream text;
  text.precision(3);
  text << bytes / 1e9 << " GB";
  return text.str();
}

bool fits_in_memory(double needed, double available) { return available <= 0 || needed < kUsableShare * available; }

}  // namespace distsgd::train
