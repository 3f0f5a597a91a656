// IDX files (the MNIST format): a big-endian header of magic and dimensions, then the uint8 payload.
#include "distsgd/core/error.hpp"
#include "distsgd/data/dataset.hpp"
#include "distsgd/data/file_bytes.hpp"

#include <torch/torch.h>

#include <cstdio>
#include <cstring>

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

at::Tensor read_idx_images(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  const std::vector<uint32_t> shape = read_header(path, bytes, kImagesMagic, 3, "images");
  const uint64_t count = shape[0], height = shape[1], width = shape[2];
  if (height == 0 || width == 0)
    throw Error(path + ": header says images of " + std::to_string(height) + "x" + std::to_string(width) +
                " (expected positive sizes)");
  const size_t header_size = 16;
  check_payload(path, bytes.size() - header_size, count, height * width,
                std::to_string(count) + " images of " + std::to_string(height) + "x" + std::to_string(width) + " (" +
                    std::to_string(count * height * width) + " bytes)");
  at::Tensor images = torch::empty({int64_t(count), 1, int64_t(height), int64_t(width)}, torch::kUInt8);
  std::memcpy(images.data_ptr<uint8_t>(), bytes.data() + header_size, count * height * width);
  return images;
}

at::Tensor read_idx_labels(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  const uint64_t count = read_header(path, bytes, kLabelsMagic, 1, "labels")[0];
  const size_t header_size = 8;
  check_payload(path, bytes.size() - header_size, count, 1,
                std::to_string(count) + " labels (" + std::to_string(count) + " bytes)");
  at::Tensor labels = torch::empty({int64_t(count)}, torch::kUInt8);
  std::memcpy(labels.data_ptr<uint8_t>(), bytes.data() + header_size, count);
  return labels.to(torch::kInt64);
}

}  // namespace distsgd::data
