#include "distsgd/optim/threads.hpp"
#include "distsgd/core/host_cores.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <thread>

namespace distsgd {

int64_t compute_threads(int64_t threads, int64_t processes_on_host) {
  if (threads > 0) return threads;
  const int64_t cores = host_cores();
  return std::max<int64_t>(1, cores / std::max<int64_t>(1, processes_on_host));
}

int64_t configure_threads(int64_t threads, int64_t processes_on_host) {
  threads = compute_threads(threads, processes_on_host);
  at::set_num_threads(static_cast<int>(threads));
  // Inter-op parallelism is unused by training; it can only be set once per process.
  static bool interop_set = false;
  if (!interop_set) {
    interop_set = true;
    try {
      at::set_num_interop_threads(1);
    } catch (const c10::Error&) {
      // Already started by earlier work in this process (tests): harmless.
    }
  }
  return threads;
}

}  // namespace distsgd
