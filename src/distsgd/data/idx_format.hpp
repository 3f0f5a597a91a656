// The byte-level layout of IDX files (the MNIST format) and CIFAR-10 binary batches, checked without torch so the
// checks can be fuzzed alone (fuzz/). Each function throws distsgd::Error naming `path` when the bytes do not hold
// what the format says, and otherwise guarantees that the payload it describes lies within `bytes`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace distsgd::data {

struct IdxImages {
  uint64_t count = 0, height = 0, width = 0;
  size_t header_size = 16;  // count * height * width pixel bytes follow, exactly
};

IdxImages parse_idx_images(const std::string& path, const std::vector<uint8_t>& bytes);
// The number of labels; that many label bytes follow the 8-byte header, exactly.
uint64_t parse_idx_labels(const std::string& path, const std::vector<uint8_t>& bytes);
constexpr size_t kIdxLabelsHeaderSize = 8;

constexpr int64_t kCifarChannels = 3, kCifarSide = 32, kCifarClasses = 10;
constexpr int64_t kCifarPixels = kCifarChannels * kCifarSide * kCifarSide;
constexpr int64_t kCifarRecordSize = 1 + kCifarPixels;
// The number of records in one CIFAR-10 binary batch, after checking its size and every label.
int64_t parse_cifar_batch(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace distsgd::data
