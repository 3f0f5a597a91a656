#include "distsgd/data/idx_format.hpp"

#include "distsgd/core/error.hpp"

#include <cstdio>

namespace distsgd::data {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;  // uint8 data, 3 dimensions
constexpr uint32_t kLabelsMagic = 0x00000801;  // uint8 data, 1 dimension

uint32_t big_endian_u32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

std::string hex(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

// The dimensions in the header of an IDX file holding `what` (images or labels), after checking its magic.
std::vector<uint32_t> read_header(const std::string& path, const std::vector<uint8_t>& bytes, uint32_t magic,
                                  size_t dims, const char* what) {
  const size_t header_size = 4 * (1 + dims);
  if (bytes.size() < 4)
    throw Error(path + ": truncated: " + std::to_string(bytes.size()) +
                " bytes, too short for an IDX header (expected " + hex(magic) + " for " + what + ")");
  const uint32_t found = big_endian_u32(bytes.data());
  if (found != magic)
    throw Error(path + ": bad IDX magic " + hex(found) + " (expected " + hex(magic) + " for " + what + ")");
  if (bytes.size() < header_size)
    throw Error(path + ": truncated: the IDX header of " + what + " needs " + std::to_string(header_size) +
                " bytes but the file has " + std::to_string(bytes.size()));
  std::vector<uint32_t> shape(dims);
  for (size_t d = 0; d < dims; ++d) shape[d] = big_endian_u32(bytes.data() + 4 * (1 + d));
  return shape;
}

// Checks that exactly `count` records of `record_size` bytes follow the header.
void check_payload(const std::string& path, size_t available, uint64_t count, uint64_t record_size,
                   const std::string& description) {
  // Division instead of count * record_size: three 32-bit dimensions can overflow 64 bits.
  const bool too_short = record_size != 0 && count > available / record_size;
  const uint64_t expected = too_short ? 0 : count * record_size;
  if (too_short || available < expected)
    throw Error(path + ": truncated: header says " + description + " but only " + std::to_string(available) +
                " bytes follow");
  if (available > expected)
    throw Error(path + ": header says " + description + " but " + std::to_string(available) +
                " bytes follow (is it the right file?)");
}

}  // namespace

IdxImages parse_idx_images(const std::string& path, const std::vector<uint8_t>& bytes) {
  const std::vector<uint32_t> shape = read_header(path, bytes, kImagesMagic, 3, "images");
  IdxImages images;
  images.count = shape[0];
  images.height = shape[1];
  images.width = shape[2];
  if (images.height == 0 || images.width == 0)
    throw Error(path + ": header says images of " + std::to_string(images.height) + "x" + std::to_string(images.width) +
                " (expected positive sizes)");
  // height * width < 2^64 (both are 32-bit); times count it may not be.
  uint64_t total = 0;
  const bool overflows = __builtin_mul_overflow(images.count, images.height * images.width, &total);
  check_payload(path, bytes.size() - images.header_size, images.count, images.height * images.width,
                std::to_string(images.count) + " images of " + std::to_string(images.height) + "x" +
                    std::to_string(images.width) + " (" +
                    (overflows ? std::string("more than 2^64") : std::to_string(total)) + " bytes)");
  return images;
}

uint64_t parse_idx_labels(const std::string& path, const std::vector<uint8_t>& bytes) {
  const uint64_t count = read_header(path, bytes, kLabelsMagic, 1, "labels")[0];
  check_payload(path, bytes.size() - kIdxLabelsHeaderSize, count, 1,
                std::to_string(count) + " labels (" + std::to_string(count) + " bytes)");
  return count;
}

int64_t parse_cifar_batch(const std::string& path, const std::vector<uint8_t>& bytes) {
  const int64_t size = int64_t(bytes.size());
  if (size == 0 || size % kCifarRecordSize != 0)
    throw Error(path + ": " + std::to_string(size) + " bytes is not a positive multiple of " +
                std::to_string(kCifarRecordSize) + " (CIFAR-10 records of 1 label byte + " +
                std::to_string(kCifarPixels) + " pixel bytes); truncated or not a CIFAR-10 binary batch");
  const int64_t records = size / kCifarRecordSize;
  for (int64_t r = 0; r < records; ++r) {
    const uint8_t label = bytes[size_t(r * kCifarRecordSize)];
    if (label >= kCifarClasses)
      throw Error(path + ": record " + std::to_string(r) + " has label " + std::to_string(label) + " (expected 0.." +
                  std::to_string(kCifarClasses - 1) + "); not a CIFAR-10 binary batch?");
  }
  return records;
}

}  // namespace distsgd::data
