// Whole-file reads shared by the dataset readers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace distsgd::data {

// The bytes of a file, inflated when it is gzip-compressed (detected from its first two bytes).
// Throws distsgd::Error naming the file when it cannot be opened or read, or its gzip stream is corrupt.
std::vector<uint8_t> read_file_bytes(const std::string& path);
// The same for bytes already read from `path`: inflated when they start as gzip, else as they are.
std::vector<uint8_t> decode_file_bytes(const std::string& path, std::vector<uint8_t> bytes);

}  // namespace distsgd::data
