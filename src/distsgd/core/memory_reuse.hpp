// Keeps freed heap memory in the process for the next allocation of its size, instead of returning it to the system
// and faulting it in again. A training step frees and reallocates the same activation and gradient buffers every
// iteration; with glibc's defaults (a buffer over 128 KiB is mmap-ed, and the top of the heap is trimmed past twice
// the adaptive threshold) many of them come back as fresh pages, and the page faults cost a fifth of a virtual
// run's CPU time (bench/README, "Test time": perf, lenet5 virtual run). Call once, before any thread starts.
#pragma once

namespace distsgd {

void keep_freed_memory_for_reuse();

}  // namespace distsgd
