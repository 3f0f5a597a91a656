#include "distsgd/core/memory_reuse.hpp"

#include <malloc.h>

namespace distsgd {

void keep_freed_memory_for_reuse() {
#ifdef M_MMAP_THRESHOLD
  // Buffers up to 64 MiB come from the heap (larger ones, e.g. a big model's flat vector, are still mapped), and the
  // heap keeps up to 256 MiB of free memory at its top. Both values fix the adaptive thresholds glibc would move.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

}  // namespace distsgd
