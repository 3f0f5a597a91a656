// The dataset registry: names, default locations, loading both splits, and per-batch normalization.
#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/data/dataset.hpp"
#include "distsgd/data/synthetic.hpp"
#include "distsgd/data/text.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <filesystem>

namespace distsgd::data {
namespace {

namespace fs = std::filesystem;

// Without throwing: an unreadable folder counts as missing, and the error names the expected path.
bool path_exists(const fs::path& path) {
  std::error_code error;
  return fs::exists(path, error);
}

bool is_mnist_format(const std::string& name) { return name == "fashion-mnist" || name == "mnist"; }

std::string missing_hint(const std::string& name, const std::string& dir) {
  return " (point --data-dir at the folder holding the " + name + " files; searched " + dir + ")";
}

// dir/base, or dir/base.gz when only that exists.
std::string find_idx_file(const std::string& name, const std::string& dir, const std::string& base) {
  const fs::path raw = fs::path(dir) / base;
  const fs::path gz = fs::path(dir) / (base + ".gz");
  if (path_exists(raw)) return raw.string();
  if (path_exists(gz)) return gz.string();
  throw Error("missing " + name + " file: expected " + raw.string() + " or " + gz.string() + missing_hint(name, dir));
}

void check_labels(const at::Tensor& labels, int64_t classes, const std::string& path) {
  if (labels.numel() == 0) return;
  const int64_t low = labels.min().item<int64_t>(), high = labels.max().item<int64_t>();
  if (low < 0 || high >= classes)
    throw Error(path + ": label " + std::to_string(high >= classes ? high : low) + " out of range (expected 0.." +
                std::to_string(classes - 1) + ")");
}

Split load_idx_split(const std::string& name, const std::string& dir, const std::string& prefix, int64_t classes) {
  const std::string images_path = find_idx_file(name, dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_idx_file(name, dir, prefix + "-labels-idx1-ubyte");
  Split split{read_idx_images(images_path), read_idx_labels(labels_path)};
  if (split.images.size(0) != split.labels.size(0))
    throw Error(images_path + " has " + std::to_string(split.images.size(0)) + " images but " + labels_path + " has " +
                std::to_string(split.labels.size(0)) + " labels (expected the same count)");
  check_labels(split.labels, classes, labels_path);
  return split;
}

Dataset load_mnist_format(const std::string& name, const std::string& dir) {
  Dataset dataset;
  dataset.name = name;
  dataset.classes = 10;
  dataset.train = load_idx_split(name, dir, "train", dataset.classes);
  dataset.test = load_idx_split(name, dir, "t10k", dataset.classes);
  dataset.channels = 1;
  dataset.height = dataset.train.images.size(2);
  dataset.width = dataset.train.images.size(3);
  if (dataset.test.images.size(2) != dataset.height || dataset.test.images.size(3) != dataset.width)
    throw Error(name + " in " + dir + ": test images are " + std::to_string(dataset.test.images.size(2)) + "x" +
                std::to_string(dataset.test.images.size(3)) + " but training images are " +
                std::to_string(dataset.height) + "x" + std::to_string(dataset.width));
  if (name == "mnist") {
    dataset.mean = {0.1307f};
    dataset.stddev = {0.3081f};
  } else {
    dataset.mean = {0.2860f};
    dataset.stddev = {0.3530f};
  }
  return dataset;
}

Dataset load_cifar10(const std::string& dir) {
  // The official archive unpacks into cifar-10-batches-bin/; accept the folder itself or its parent.
  std::string folder = dir;
  if (!path_exists(fs::path(dir) / "data_batch_1.bin") && path_exists(fs::path(dir) / "cifar-10-batches-bin"))
    folder = (fs::path(dir) / "cifar-10-batches-bin").string();
  auto path_of = [&](const std::string& file) {
    const fs::path path = fs::path(folder) / file;
    if (!path_exists(path))
      throw Error("missing cifar10 file: expected " + path.string() + missing_hint("cifar10", dir));
    return path.string();
  };
  std::vector<std::string> train_paths;
  for (int i = 1; i <= 5; ++i) train_paths.push_back(path_of("data_batch_" + std::to_string(i) + ".bin"));
  const std::string test_path = path_of("test_batch.bin");

  Dataset dataset;
  dataset.name = "cifar10";
  dataset.channels = 3;
  dataset.height = dataset.width = 32;
  dataset.classes = 10;
  dataset.mean = {0.4914f, 0.4822f, 0.4465f};
  dataset.stddev = {0.2470f, 0.2435f, 0.2616f};
  dataset.train = read_cifar_batches(train_paths);
  dataset.test = read_cifar_batches({test_path});
  return dataset;
}

}  // namespace

std::vector<std::string> dataset_names() { return {"fashion-mnist", "mnist", "cifar10", "synthetic", "text"}; }

std::string default_dataset_dir(const std::string& name) {
  if (name == "fashion-mnist") return "/usr/share/datasets/fashion-mnist";
  if (name == "mnist") return "/usr/share/datasets/mnist";
  if (name == "cifar10") return "/usr/share/datasets/cifar10";
  return "";
}

Dataset load_dataset(const DatasetOptions& options) {
  const std::vector<std::string> names = dataset_names();
  if (std::find(names.begin(), names.end(), options.name) == names.end())
    throw Error("unknown dataset '" + options.name + "' (valid names: " + join(names) + ")");
  torch::NoGradGuard no_grad;
  if (options.name == "synthetic") return make_synthetic(options);
  if (options.name == "text") return load_text(options);
  const std::string dir = options.dir.empty() ? default_dataset_dir(options.name) : options.dir;
  if (is_mnist_format(options.name)) return load_mnist_format(options.name, dir);
  return load_cifar10(dir);
}

at::Tensor normalize(const at::Tensor& images, const Dataset& dataset) {
  if (dataset.text) {
    require(images.dim() == 4 && images.size(3) == dataset.width,
            "normalize: expected byte sequences [B, 1, 1, " + std::to_string(dataset.width) + "] for text");
    return images.reshape({images.size(0), dataset.width}).to(torch::kLong);
  }
  const int64_t channels = int64_t(dataset.mean.size());
  require(images.dim() == 4 && images.size(1) == channels && int64_t(dataset.stddev.size()) == channels,
          "normalize: expected images [B, " + std::to_string(channels) + ", H, W] for " + dataset.name + ", got " +
              std::to_string(images.dim()) + " dimensions" +
              (images.dim() >= 2 ? " with " + std::to_string(images.size(1)) + " channels" : std::string()));
  // (x/255 - mean) / stddev = x * scale + shift, one multiply-add per pixel with per-channel constants.
  std::vector<float> scale(static_cast<size_t>(channels)), shift(static_cast<size_t>(channels));
  for (size_t c = 0; c < size_t(channels); ++c) {
    scale[c] = 1.0f / (255.0f * dataset.stddev[c]);
    shift[c] = -dataset.mean[c] / dataset.stddev[c];
  }
  const at::Tensor scale_t = torch::tensor(scale).view({1, channels, 1, 1});
  const at::Tensor shift_t = torch::tensor(shift).view({1, channels, 1, 1});
  return torch::addcmul(shift_t, images.to(torch::kFloat), scale_t);
}

}  // namespace distsgd::data
