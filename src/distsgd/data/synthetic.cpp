#include "distsgd/data/synthetic.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/data/seed_mix.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

namespace distsgd::data {
namespace {

// Pixels are 128 + kSignal * (+-1 class pattern) + uniform noise in [-kNoise, kNoise], clamped to [0, 255]:
// noisy enough that single pixels are unreliable, while the block patterns make the class clear to any model.
constexpr int64_t kSignal = 40;
constexpr int64_t kNoise = 90;
// Pattern cells are kBlock x kBlock pixels, so convolutions and pooling keep the signal.
constexpr int64_t kBlock = 4;

enum Stream : uint64_t { kPatternStream = 0, kTrainStream = 1, kTestStream = 2 };

at::Generator generator(uint64_t seed, Stream stream) {
  return at::make_generator<at::CPUGeneratorImpl>(mix_seed(seed, stream));
}

// int16 [classes, C, H, W] of +-kSignal, constant over kBlock x kBlock cells.
at::Tensor class_patterns(int64_t classes, int64_t c, int64_t h, int64_t w, uint64_t seed) {
  const int64_t cells_h = (h + kBlock - 1) / kBlock, cells_w = (w + kBlock - 1) / kBlock;
  at::Tensor cells =
      torch::randint(0, 2, {classes, c, cells_h, cells_w}, generator(seed, kPatternStream), torch::kInt16);
  cells = cells.mul_(2 * kSignal).sub_(kSignal);
  return cells.repeat_interleave(kBlock, 2).repeat_interleave(kBlock, 3).narrow(2, 0, h).narrow(3, 0, w).contiguous();
}

Split draw_split(const at::Tensor& patterns, int64_t size, uint64_t seed, Stream stream) {
  at::Generator gen = generator(seed, stream);
  const int64_t classes = patterns.size(0);
  // Balanced labels in a random order.
  at::Tensor labels = torch::arange(size, torch::kInt64).remainder_(classes);
  labels = labels.index_select(0, torch::randperm(size, gen, torch::kInt64));
  std::vector<int64_t> shape = patterns.sizes().vec();
  shape[0] = size;
  at::Tensor images = torch::empty(shape, torch::kUInt8);
  // In chunks, so the int16 intermediates stay small next to the uint8 result even for large images.
  constexpr int64_t kChunk = 256;
  for (int64_t begin = 0; begin < size; begin += kChunk) {
    shape[0] = std::min(kChunk, size - begin);
    at::Tensor pixels = torch::randint(-kNoise, kNoise + 1, shape, gen, torch::kInt16);
    pixels.add_(patterns.index_select(0, labels.narrow(0, begin, shape[0]))).add_(128).clamp_(0, 255);
    images.narrow(0, begin, shape[0]).copy_(pixels);
  }
  return Split{images, labels};
}

}  // namespace

Dataset make_synthetic(const DatasetOptions& options) {
  const std::vector<int64_t>& shape = options.synthetic_shape;
  require(shape.size() == 3 && shape[0] > 0 && shape[1] > 0 && shape[2] > 0,
          "synthetic data shape " + shape_text(shape) + " is invalid (expected 3 positive sizes C,H,W, e.g. 3x32x32)");
  require(options.synthetic_classes >= 2,
          "synthetic data needs at least 2 classes (got " + std::to_string(options.synthetic_classes) + ")");
  require(options.synthetic_train_size > 0 && options.synthetic_test_size > 0,
          "synthetic data sizes must be positive (got train " + std::to_string(options.synthetic_train_size) +
              ", test " + std::to_string(options.synthetic_test_size) + ")");
  torch::NoGradGuard no_grad;
  Dataset dataset;
  dataset.name = "synthetic";
  dataset.channels = shape[0];
  dataset.height = shape[1];
  dataset.width = shape[2];
  dataset.classes = options.synthetic_classes;
  // Uniform noise around 128: mean ~0.5, stddev ~0.29 of the range.
  dataset.mean.assign(size_t(dataset.channels), 0.5f);
  dataset.stddev.assign(size_t(dataset.channels), 0.29f);
  const at::Tensor patterns = class_patterns(dataset.classes, shape[0], shape[1], shape[2], options.seed);
  dataset.train = draw_split(patterns, options.synthetic_train_size, options.seed, kTrainStream);
  dataset.test = draw_split(patterns, options.synthetic_test_size, options.seed, kTestStream);
  return dataset;
}

}  // namespace distsgd::data
