// libFuzzer target: the IDX reader's byte-level checks (src/distsgd/data/idx_format.hpp) behind the gzip
// detection and inflation of file_bytes. The input is a file's contents; read as images and as labels, a layout
// that is accepted must fit the bytes exactly (the reader copies that many). Anything but acceptance or a
// distsgd::Error is a finding.
#include "distsgd/core/error.hpp"
#include "distsgd/data/file_bytes.hpp"
#include "distsgd/data/idx_format.hpp"

#include <cstdint>
#include <cstdlib>
#include <vector>

using namespace distsgd::data;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes;
  try {
    bytes = decode_file_bytes("input", std::vector<uint8_t>(data, data + size));
  } catch (const distsgd::Error&) {
    return 0;
  }
  try {
    const IdxImages images = parse_idx_images("input", bytes);
    if (images.header_size + images.count * images.height * images.width != bytes.size()) std::abort();
    volatile uint8_t last = bytes.empty() ? 0 : bytes[bytes.size() - 1];  // touch the payload's end
    (void)last;
  } catch (const distsgd::Error&) {
  }
  try {
    const uint64_t labels = parse_idx_labels("input", bytes);
    if (kIdxLabelsHeaderSize + labels != bytes.size()) std::abort();
  } catch (const distsgd::Error&) {
  }
  return 0;
}
