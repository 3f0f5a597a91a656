// CIFAR-10 binary batches: fixed-size records of one label byte then 3x32x32 channel-major pixels.
#include "distsgd/core/error.hpp"
#include "distsgd/data/dataset.hpp"
#include "distsgd/data/file_bytes.hpp"

#include <torch/torch.h>

#include <cstring>

namespace distsgd::data {
namespace {

constexpr int64_t kChannels = 3, kSide = 32, kClasses = 10;
constexpr int64_t kPixels = kChannels * kSide * kSide;
constexpr int64_t kRecordSize = 1 + kPixels;

}  // namespace

Split read_cifar_batches(const std::vector<std::string>& paths) {
  require(!paths.empty(), "no CIFAR-10 batch files given");
  std::vector<std::vector<uint8_t>> files;
  int64_t total = 0;
  for (const std::string& path : paths) {
    std::vector<uint8_t> bytes = read_file_bytes(path);
    const int64_t size = int64_t(bytes.size());
    if (size == 0 || size % kRecordSize != 0)
      throw Error(path + ": " + std::to_string(size) + " bytes is not a positive multiple of " +
                  std::to_string(kRecordSize) + " (CIFAR-10 records of 1 label byte + " + std::to_string(kPixels) +
                  " pixel bytes); truncated or not a CIFAR-10 binary batch");
    total += size / kRecordSize;
    files.push_back(std::move(bytes));
  }

  at::Tensor images = torch::empty({total, kChannels, kSide, kSide}, torch::kUInt8);
  at::Tensor labels = torch::empty({total}, torch::kInt64);
  uint8_t* image_out = images.data_ptr<uint8_t>();
  int64_t* label_out = labels.data_ptr<int64_t>();
  int64_t n = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    const std::vector<uint8_t>& bytes = files[f];
    const int64_t records = int64_t(bytes.size()) / kRecordSize;
    for (int64_t r = 0; r < records; ++r, ++n) {
      const uint8_t* record = bytes.data() + r * kRecordSize;
      if (record[0] >= kClasses)
        throw Error(paths[f] + ": record " + std::to_string(r) + " has label " + std::to_string(record[0]) +
                    " (expected 0.." + std::to_string(kClasses - 1) + "); not a CIFAR-10 binary batch?");
      label_out[n] = record[0];
      std::memcpy(image_out + n * kPixels, record + 1, kPixels);
    }
  }
  return Split{images, labels};
}

}  // namespace distsgd::data
