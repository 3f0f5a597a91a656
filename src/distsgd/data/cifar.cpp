// CIFAR-10 binary batches: fixed-size records of one label byte then 3x32x32 channel-major pixels
// (idx_format.hpp checks the layout).
#include "distsgd/core/error.hpp"
#include "distsgd/data/dataset.hpp"
#include "distsgd/data/file_bytes.hpp"
#include "distsgd/data/idx_format.hpp"

#include <torch/torch.h>

#include <cstring>

namespace distsgd::data {

Split read_cifar_batches(const std::vector<std::string>& paths) {
  require(!paths.empty(), "no CIFAR-10 batch files given");
  std::vector<std::vector<uint8_t>> files;
  int64_t total = 0;
  for (const std::string& path : paths) {
    std::vector<uint8_t> bytes = read_file_bytes(path);
    total += parse_cifar_batch(path, bytes);
    files.push_back(std::move(bytes));
  }

  at::Tensor images = torch::empty({total, kCifarChannels, kCifarSide, kCifarSide}, torch::kUInt8);
  at::Tensor labels = torch::empty({total}, torch::kInt64);
  uint8_t* image_out = images.data_ptr<uint8_t>();
  int64_t* label_out = labels.data_ptr<int64_t>();
  int64_t n = 0;
  for (const std::vector<uint8_t>& bytes : files) {
    const int64_t records = int64_t(bytes.size()) / kCifarRecordSize;
    for (int64_t r = 0; r < records; ++r, ++n) {
      const uint8_t* record = bytes.data() + r * kCifarRecordSize;
      label_out[n] = record[0];
      std::memcpy(image_out + n * kCifarPixels, record + 1, kCifarPixels);
    }
  }
  return Split{images, labels};
}

}  // namespace distsgd::data
