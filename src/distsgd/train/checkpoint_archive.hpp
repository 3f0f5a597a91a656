// A checkpoint file is a zip archive (written by torch::serialize::OutputArchive). libtorch's reader (miniz) allocates
// each record at the size the archive's central directory declares for it before it reads a byte of it, so a damaged
// or hostile directory could make it allocate gigabytes (the fuzzer found a file of 58 KB asking for 4.29 GB). The
// check here reads the central directory the way miniz finds it and refuses, before libtorch sees the file, any record
// whose declared sizes the file cannot back:
//   - the directory and every record's data lie inside the file, and there are no more records than the directory's
//     size can hold (46 bytes each at least);
//   - a stored record (torch's tensors and pickles) declares as many bytes as it stores;
//   - a deflated record (torch compresses only TorchScript source) declares at most 1032 bytes per compressed byte,
//     deflate's own limit;
//   - no other compression method.
// So what the reader allocates for a file of N bytes is at most N for its stored records plus 1032 times the
// compressed bytes of its deflated ones. Torch-free.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace distsgd::train {

struct ArchiveRecord {
  std::string name;
  uint16_t method = 0;  // 0 stored, 8 deflated
  uint64_t compressed_bytes = 0;
  uint64_t uncompressed_bytes = 0;
  uint64_t local_header_offset = 0;
};

// The records of the archive in `bytes`, each checked as above; throws Error (one line, without the file's name)
// saying which record or field is out of bounds.
std::vector<ArchiveRecord> checked_archive_records(std::string_view bytes);

}  // namespace distsgd::train
