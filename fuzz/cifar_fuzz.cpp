// libFuzzer target: the CIFAR-10 batch reader's checks (src/distsgd/data/idx_format.hpp) behind gzip detection and
// inflation. An accepted batch is a whole number of records, each with a label below 10.
#include "distsgd/core/error.hpp"
#include "distsgd/data/file_bytes.hpp"
#include "distsgd/data/idx_format.hpp"

#include <cstdint>
#include <cstdlib>
#include <vector>

using namespace distsgd::data;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const std::vector<uint8_t> bytes = decode_file_bytes("input", std::vector<uint8_t>(data, data + size));
    const int64_t records = parse_cifar_batch("input", bytes);
    if (records <= 0 || static_cast<size_t>(records * kCifarRecordSize) != bytes.size()) std::abort();
    for (int64_t r = 0; r < records; ++r) {
      if (bytes[static_cast<size_t>(r * kCifarRecordSize)] >= kCifarClasses) std::abort();
    }
  } catch (const distsgd::Error&) {
  }
  return 0;
}
