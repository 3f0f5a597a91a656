// IDX files (the MNIST format): a big-endian header of magic and dimensions, then the uint8 payload
// (idx_format.hpp checks the layout).
#include "distsgd/data/dataset.hpp"
#include "distsgd/data/file_bytes.hpp"
#include "distsgd/data/idx_format.hpp"

#include <torch/torch.h>

#include <cstring>

namespace distsgd::data {

at::Tensor read_idx_images(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  const IdxImages layout = parse_idx_images(path, bytes);
  at::Tensor images =
      torch::empty({int64_t(layout.count), 1, int64_t(layout.height), int64_t(layout.width)}, torch::kUInt8);
  std::memcpy(images.data_ptr<uint8_t>(), bytes.data() + layout.header_size,
              layout.count * layout.height * layout.width);
  return images;
}

at::Tensor read_idx_labels(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  const uint64_t count = parse_idx_labels(path, bytes);
  at::Tensor labels = torch::empty({int64_t(count)}, torch::kUInt8);
  std::memcpy(labels.data_ptr<uint8_t>(), bytes.data() + kIdxLabelsHeaderSize, count);
  return labels.to(torch::kInt64);
}

}  // namespace distsgd::data
