// Compute threads of this process.
#pragma once
#include <cstdint>

namespace distsgd {

// Sets torch's intra-op threads (and so OpenMP's, which OpenBLAS-openmp follows) to `threads`, or, when 0,
// to max(1, cores / processes_on_host). Returns the number set.
int64_t configure_threads(int64_t threads, int64_t processes_on_host = 1);

// The threads configure_threads sets, without setting them: `threads`, or when 0 max(1, cores / processes_on_host).
int64_t compute_threads(int64_t threads, int64_t processes_on_host);

}  // namespace distsgd
