// Datasets held in memory as raw bytes; normalization happens per batch.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace distsgd::data {

// One split: images uint8 [N, C, H, W], labels int64 [N] in [0, classes). Text (data/text.hpp): byte sequences
// [N, 1, 1, T] and their next bytes [N, T].
struct Split {
  at::Tensor images;
  at::Tensor labels;
  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

struct Dataset {
  std::string name;
  int64_t channels = 0, height = 0, width = 0, classes = 0;
  std::vector<float> mean, stddev;  // per channel, applied to pixel/255
  bool text = false;                // byte sequences for a language model (data/text.hpp), width = T bytes
  Split train, test;
};

struct DatasetOptions {
  std::string name = "fashion-mnist";  // see dataset_names()
  std::string dir;                     // empty: the default directory for the name
  // Synthetic data (for throughput runs): any shape, random pixels, labels learnable from the pixels.
  std::vector<int64_t> synthetic_shape{1, 28, 28};  // C, H, W
  int64_t synthetic_classes = 10;
  int64_t synthetic_train_size = 4096;
  int64_t synthetic_test_size = 512;
  std::string data_file;  // text: the corpus (empty: data/text.hpp's default)
  int64_t context = 64;   // text: bytes per sequence
  uint64_t seed = 1;
};

// Valid names for DatasetOptions::name.
std::vector<std::string> dataset_names();

// Default directory for a dataset name ("" when it has none).
std::string default_dataset_dir(const std::string& name);

// Loads both splits. Throws distsgd::Error naming the file and what was expected when a file is missing,
// corrupt or truncated, and listing the valid names when the name is unknown.
Dataset load_dataset(const DatasetOptions& options);

// IDX files (MNIST format), gzip-compressed or raw (detected from the first bytes).
at::Tensor read_idx_images(const std::string& path);  // uint8 [N, 1, H, W]
at::Tensor read_idx_labels(const std::string& path);  // int64 [N]

// CIFAR-10 binary batches: records of 1 label byte + 3072 pixel bytes (3x32x32, channel-major).
Split read_cifar_batches(const std::vector<std::string>& paths);

// uint8 [B, C, H, W] -> float [B, C, H, W]: (x/255 - mean[c]) / stddev[c]. Text: uint8 [B, 1, 1, T] -> the bytes
// as int64 [B, T], a language model's input.
at::Tensor normalize(const at::Tensor& images, const Dataset& dataset);

}  // namespace distsgd::data
