// Dataset readers (IDX, CIFAR-10), the dataset registry, synthetic data, normalization and the sharded loader.
#include "distsgd/core/error.hpp"
#include "distsgd/data/dataset.hpp"
#include "distsgd/data/loader.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace distsgd::data;
using distsgd::testing::error_of_call;

namespace {

using Bytes = std::vector<uint8_t>;

// The message of the distsgd::Error that f throws (a test failure when it throws none).
#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << "in: " << (text)

void put_be32(Bytes& bytes, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(uint8_t(value >> shift));
}

// IDX images whose pixel (i, y, x) is i + y * w + x (mod 256).
Bytes idx_images(uint32_t n, uint32_t h, uint32_t w) {
  Bytes bytes;
  put_be32(bytes, 0x803);
  put_be32(bytes, n);
  put_be32(bytes, h);
  put_be32(bytes, w);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t p = 0; p < h * w; ++p) bytes.push_back(uint8_t(i + p));
  return bytes;
}

Bytes idx_labels(const std::vector<uint8_t>& labels) {
  Bytes bytes;
  put_be32(bytes, 0x801);
  put_be32(bytes, uint32_t(labels.size()));
  bytes.insert(bytes.end(), labels.begin(), labels.end());
  return bytes;
}

void write_raw(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

void write_gzip(const fs::path& path, const Bytes& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr) << path;
  ASSERT_EQ(gzwrite(file, bytes.data(), unsigned(bytes.size())), int(bytes.size()));
  ASSERT_EQ(gzclose(file), Z_OK);
}

Bytes read_raw(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A fresh directory per test, removed afterwards.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "distsgd-data-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

using IdxTest = TempDirTest;
using CifarTest = TempDirTest;
using DatasetTest = TempDirTest;

}  // namespace

// ---- IDX ----

TEST_F(IdxTest, ReadsRawImagesAndLabels) {
  write_raw(path("images"), idx_images(3, 4, 5));
  write_raw(path("labels"), idx_labels({7, 0, 9}));
  const at::Tensor images = read_idx_images(path("images"));
  EXPECT_EQ(images.sizes(), (std::vector<int64_t>{3, 1, 4, 5}));
  EXPECT_EQ(images.scalar_type(), torch::kUInt8);
  EXPECT_EQ(images[2][0][1][3].item<int64_t>(), 2 + 1 * 5 + 3);
  EXPECT_EQ(images[0][0][0][0].item<int64_t>(), 0);
  const at::Tensor labels = read_idx_labels(path("labels"));
  EXPECT_EQ(labels.scalar_type(), torch::kInt64);
  EXPECT_TRUE(labels.equal(torch::tensor({7, 0, 9}, torch::kInt64)));
}

TEST_F(IdxTest, ReadsGzipImagesAndLabels) {
  write_gzip(path("images.gz"), idx_images(6, 3, 2));
  write_gzip(path("labels.gz"), idx_labels({1, 2, 3, 4, 5, 6}));
  write_raw(path("images"), idx_images(6, 3, 2));
  EXPECT_TRUE(read_idx_images(path("images.gz")).equal(read_idx_images(path("images"))));
  EXPECT_TRUE(read_idx_labels(path("labels.gz")).equal(torch::arange(1, 7, torch::kInt64)));
}

TEST_F(IdxTest, ReadsConcatenatedGzipMembers) {
  // gzip -d reads concatenated members as one stream; so do we.
  const Bytes whole = idx_labels({4, 5, 6, 7});
  write_gzip(path("head.gz"), Bytes(whole.begin(), whole.begin() + 9));
  write_gzip(path("tail.gz"), Bytes(whole.begin() + 9, whole.end()));
  Bytes joined = read_raw(path("head.gz"));
  const Bytes tail = read_raw(path("tail.gz"));
  joined.insert(joined.end(), tail.begin(), tail.end());
  write_raw(path("labels.gz"), joined);
  EXPECT_TRUE(read_idx_labels(path("labels.gz")).equal(torch::arange(4, 8, torch::kInt64)));
}

TEST_F(IdxTest, BadMagicNamesFileAndExpectedMagic) {
  write_raw(path("labels"), idx_labels({1, 2}));
  EXPECT_THROW(read_idx_images(path("labels")), distsgd::Error);
  const std::string message = error_of_call([&] { read_idx_images(path("labels")); });
  EXPECT_CONTAINS(message, path("labels"));
  EXPECT_CONTAINS(message, "bad IDX magic 0x00000801");
  EXPECT_CONTAINS(message, "expected 0x00000803 for images");

  write_raw(path("images"), idx_images(1, 2, 2));
  const std::string labels_message = error_of_call([&] { read_idx_labels(path("images")); });
  EXPECT_CONTAINS(labels_message, path("images"));
  EXPECT_CONTAINS(labels_message, "expected 0x00000801 for labels");
}

TEST_F(IdxTest, TruncatedPayloadNamesFileAndSizes) {
  Bytes bytes = idx_images(3, 4, 5);
  bytes.resize(bytes.size() - 7);
  write_raw(path("images"), bytes);
  EXPECT_THROW(read_idx_images(path("images")), distsgd::Error);
  const std::string message = error_of_call([&] { read_idx_images(path("images")); });
  EXPECT_CONTAINS(message, path("images"));
  EXPECT_CONTAINS(message, "truncated: header says 3 images of 4x5 (60 bytes) but only 53 bytes follow");

  Bytes labels = idx_labels({1, 2, 3});
  labels.pop_back();
  write_raw(path("labels"), labels);
  EXPECT_CONTAINS(error_of_call([&] { read_idx_labels(path("labels")); }),
                  "3 labels (3 bytes) but only 2 bytes follow");
}

TEST_F(IdxTest, TruncatedHeaderNamesFile) {
  Bytes bytes = idx_images(3, 4, 5);
  bytes.resize(10);
  write_raw(path("images"), bytes);
  const std::string message = error_of_call([&] { read_idx_images(path("images")); });
  EXPECT_CONTAINS(message, path("images"));
  EXPECT_CONTAINS(message, "truncated");

  write_raw(path("tiny"), Bytes{0, 0});
  EXPECT_CONTAINS(error_of_call([&] { read_idx_labels(path("tiny")); }), path("tiny"));
  write_raw(path("empty"), Bytes{});
  EXPECT_CONTAINS(error_of_call([&] { read_idx_images(path("empty")); }), path("empty"));
}

TEST_F(IdxTest, TrailingBytesAreAnError) {
  Bytes bytes = idx_labels({1, 2, 3});
  bytes.push_back(4);
  write_raw(path("labels"), bytes);
  EXPECT_CONTAINS(error_of_call([&] { read_idx_labels(path("labels")); }), path("labels"));
}

TEST_F(IdxTest, CorruptGzipNamesFile) {
  write_raw(path("garbage.gz"), Bytes{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff, 0x12, 0x34});
  EXPECT_THROW(read_idx_images(path("garbage.gz")), distsgd::Error);
  const std::string message = error_of_call([&] { read_idx_images(path("garbage.gz")); });
  EXPECT_CONTAINS(message, path("garbage.gz"));
  EXPECT_CONTAINS(message, "gzip");

  // A valid gzip file cut in half.
  write_gzip(path("whole.gz"), idx_images(50, 8, 8));
  Bytes half = read_raw(path("whole.gz"));
  half.resize(half.size() / 2);
  write_raw(path("half.gz"), half);
  const std::string truncated = error_of_call([&] { read_idx_images(path("half.gz")); });
  EXPECT_CONTAINS(truncated, path("half.gz"));
  EXPECT_CONTAINS(truncated, "truncated gzip");
}

TEST_F(IdxTest, MissingFileNamesFileAndReason) {
  EXPECT_THROW(read_idx_images(path("nope.gz")), distsgd::Error);
  const std::string message = error_of_call([&] { read_idx_labels(path("nope.gz")); });
  EXPECT_CONTAINS(message, "cannot open " + path("nope.gz") + ": No such file or directory");
  // A directory opens but cannot be read.
  EXPECT_CONTAINS(error_of_call([&] { read_idx_images(dir_.string()); }), dir_.string());
}

// ---- CIFAR-10 ----

namespace {

// CIFAR-10 records whose label is labels[r] and whose pixels are all r + offset.
Bytes cifar_records(const std::vector<uint8_t>& labels, uint8_t offset = 0) {
  Bytes bytes;
  for (size_t r = 0; r < labels.size(); ++r) {
    bytes.push_back(labels[r]);
    bytes.insert(bytes.end(), 3072, uint8_t(r + offset));
  }
  return bytes;
}

}  // namespace

TEST_F(CifarTest, ReadsAndConcatenatesBatches) {
  write_raw(path("a.bin"), cifar_records({3, 9}));
  write_raw(path("b.bin"), cifar_records({0}, 100));
  const Split split = read_cifar_batches({path("a.bin"), path("b.bin")});
  EXPECT_EQ(split.images.sizes(), (std::vector<int64_t>{3, 3, 32, 32}));
  EXPECT_EQ(split.images.scalar_type(), torch::kUInt8);
  EXPECT_TRUE(split.labels.equal(torch::tensor({3, 9, 0}, torch::kInt64)));
  EXPECT_EQ(split.images[1].min().item<int64_t>(), 1);
  EXPECT_EQ(split.images[1].max().item<int64_t>(), 1);
  EXPECT_EQ(split.images[2][2][31][31].item<int64_t>(), 100);
}

TEST_F(CifarTest, TruncatedOrEmptyFileNamesIt) {
  Bytes bytes = cifar_records({1, 2});
  bytes.pop_back();
  write_raw(path("cut.bin"), bytes);
  EXPECT_THROW(read_cifar_batches({path("cut.bin")}), distsgd::Error);
  const std::string message = error_of_call([&] { read_cifar_batches({path("cut.bin")}); });
  EXPECT_CONTAINS(message, path("cut.bin"));
  EXPECT_CONTAINS(message, "3073");
  write_raw(path("empty.bin"), Bytes{});
  EXPECT_CONTAINS(error_of_call([&] { read_cifar_batches({path("empty.bin")}); }), path("empty.bin"));
  EXPECT_CONTAINS(error_of_call([&] { read_cifar_batches({path("missing.bin")}); }), path("missing.bin"));
}

TEST_F(CifarTest, LabelOutOfRangeNamesFile) {
  write_raw(path("bad.bin"), cifar_records({1, 10}));
  const std::string message = error_of_call([&] { read_cifar_batches({path("bad.bin")}); });
  EXPECT_CONTAINS(message, path("bad.bin"));
  EXPECT_CONTAINS(message, "label 10");
}

// ---- Datasets ----

namespace {

void write_fake_mnist(const fs::path& dir, uint32_t train, uint32_t test, bool gzip_train) {
  std::vector<uint8_t> train_labels(train), test_labels(test);
  for (uint32_t i = 0; i < train; ++i) train_labels[i] = uint8_t(i % 10);
  for (uint32_t i = 0; i < test; ++i) test_labels[i] = uint8_t((i * 3) % 10);
  if (gzip_train) {
    write_gzip(dir / "train-images-idx3-ubyte.gz", idx_images(train, 28, 28));
    write_gzip(dir / "train-labels-idx1-ubyte.gz", idx_labels(train_labels));
  } else {
    write_raw(dir / "train-images-idx3-ubyte", idx_images(train, 28, 28));
    write_raw(dir / "train-labels-idx1-ubyte", idx_labels(train_labels));
  }
  write_raw(dir / "t10k-images-idx3-ubyte", idx_images(test, 28, 28));
  write_raw(dir / "t10k-labels-idx1-ubyte", idx_labels(test_labels));
}

}  // namespace

TEST(DatasetRegistry, NamesAndDefaultDirs) {
  EXPECT_EQ(dataset_names(), (std::vector<std::string>{"fashion-mnist", "mnist", "cifar10", "synthetic", "text"}));
  EXPECT_EQ(default_dataset_dir("fashion-mnist"), "/usr/share/datasets/fashion-mnist");
  EXPECT_EQ(default_dataset_dir("mnist"), "/usr/share/datasets/mnist");
  EXPECT_EQ(default_dataset_dir("cifar10"), "/usr/share/datasets/cifar10");
  EXPECT_EQ(default_dataset_dir("synthetic"), "");
  EXPECT_EQ(default_dataset_dir("text"), "") << "text reads --data-file";
}

TEST(DatasetRegistry, UnknownNameListsValidNames) {
  DatasetOptions options;
  options.name = "imagenet";
  EXPECT_THROW(load_dataset(options), distsgd::Error);
  const std::string message = error_of_call([&] { load_dataset(options); });
  EXPECT_CONTAINS(message, "imagenet");
  for (const std::string& name : dataset_names()) EXPECT_CONTAINS(message, name);
}

TEST_F(DatasetTest, LoadsFakeFashionMnistBothSplits) {
  for (bool gzip_train : {false, true}) {
    write_fake_mnist(dir_, 30, 12, gzip_train);
    DatasetOptions options;
    options.name = "fashion-mnist";
    options.dir = dir_.string();
    const Dataset dataset = load_dataset(options);
    EXPECT_EQ(dataset.name, "fashion-mnist");
    EXPECT_EQ(dataset.channels, 1);
    EXPECT_EQ(dataset.height, 28);
    EXPECT_EQ(dataset.width, 28);
    EXPECT_EQ(dataset.classes, 10);
    EXPECT_EQ(dataset.mean, std::vector<float>{0.2860f});
    EXPECT_EQ(dataset.stddev, std::vector<float>{0.3530f});
    EXPECT_EQ(dataset.train.size(), 30);
    EXPECT_EQ(dataset.test.size(), 12);
    EXPECT_EQ(dataset.train.images.sizes(), (std::vector<int64_t>{30, 1, 28, 28}));
    EXPECT_EQ(dataset.test.labels[4].item<int64_t>(), 2);
    EXPECT_EQ(dataset.train.labels[13].item<int64_t>(), 3);
    for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"}) {
      fs::remove(dir_ / name);
      fs::remove(dir_ / (std::string(name) + ".gz"));
    }
  }
}

TEST_F(DatasetTest, MissingFileNamesExpectedPathAndFlag) {
  write_fake_mnist(dir_, 20, 10, false);
  fs::remove(dir_ / "t10k-labels-idx1-ubyte");
  DatasetOptions options;
  options.name = "mnist";
  options.dir = dir_.string();
  EXPECT_THROW(load_dataset(options), distsgd::Error);
  const std::string message = error_of_call([&] { load_dataset(options); });
  EXPECT_CONTAINS(message, (dir_ / "t10k-labels-idx1-ubyte").string());
  EXPECT_CONTAINS(message, "--data-dir");
}

TEST_F(DatasetTest, CountMismatchAndBadLabelsNameFiles) {
  write_fake_mnist(dir_, 20, 10, false);
  write_raw(dir_ / "t10k-labels-idx1-ubyte", idx_labels({1, 2, 3}));
  DatasetOptions options;
  options.name = "fashion-mnist";
  options.dir = dir_.string();
  const std::string mismatch = error_of_call([&] { load_dataset(options); });
  EXPECT_CONTAINS(mismatch, (dir_ / "t10k-images-idx3-ubyte").string());
  EXPECT_CONTAINS(mismatch, "10 images");
  EXPECT_CONTAINS(mismatch, "3 labels");

  write_raw(dir_ / "t10k-labels-idx1-ubyte", idx_labels({0, 1, 2, 3, 4, 5, 6, 7, 8, 12}));
  const std::string bad_label = error_of_call([&] { load_dataset(options); });
  EXPECT_CONTAINS(bad_label, (dir_ / "t10k-labels-idx1-ubyte").string());
  EXPECT_CONTAINS(bad_label, "label 12");
}

TEST_F(DatasetTest, LoadsCifar10FromArchiveSubfolder) {
  const fs::path folder = dir_ / "cifar-10-batches-bin";
  fs::create_directories(folder);
  for (int i = 1; i <= 5; ++i) write_raw(folder / ("data_batch_" + std::to_string(i) + ".bin"), cifar_records({1, 2}));
  write_raw(folder / "test_batch.bin", cifar_records({9}));
  DatasetOptions options;
  options.name = "cifar10";
  options.dir = dir_.string();
  const Dataset dataset = load_dataset(options);
  EXPECT_EQ(dataset.channels, 3);
  EXPECT_EQ(dataset.classes, 10);
  EXPECT_EQ(dataset.mean.size(), 3u);
  EXPECT_EQ(dataset.train.size(), 10);
  EXPECT_EQ(dataset.test.size(), 1);

  fs::remove(folder / "data_batch_4.bin");
  const std::string message = error_of_call([&] { load_dataset(options); });
  EXPECT_CONTAINS(message, (folder / "data_batch_4.bin").string());
  EXPECT_CONTAINS(message, "--data-dir");
}

TEST(RealFashionMnist, LoadsBothSplits) {
  if (!fs::exists("/usr/share/datasets/fashion-mnist")) GTEST_SKIP() << "/usr/share/datasets/fashion-mnist is absent";
  const Dataset dataset = load_dataset(DatasetOptions{});
  EXPECT_EQ(dataset.train.size(), 60000);
  EXPECT_EQ(dataset.test.size(), 10000);
  EXPECT_EQ(dataset.train.images.sizes(), (std::vector<int64_t>{60000, 1, 28, 28}));
  EXPECT_EQ(dataset.test.images.sizes(), (std::vector<int64_t>{10000, 1, 28, 28}));
  for (const Split* split : {&dataset.train, &dataset.test}) {
    EXPECT_GE(split->labels.min().item<int64_t>(), 0);
    EXPECT_LT(split->labels.max().item<int64_t>(), 10);
  }
  // The published normalization constants match the data.
  const at::Tensor pixels = dataset.train.images.to(torch::kFloat).div(255);
  EXPECT_NEAR(pixels.mean().item<double>(), 0.2860, 0.001);
  EXPECT_NEAR(pixels.std().item<double>(), 0.3530, 0.001);
}

// ---- Synthetic data ----

namespace {

DatasetOptions synthetic_options(uint64_t seed = 7) {
  DatasetOptions options;
  options.name = "synthetic";
  options.synthetic_shape = {3, 10, 9};
  options.synthetic_classes = 5;
  options.synthetic_train_size = 400;
  options.synthetic_test_size = 100;
  options.seed = seed;
  return options;
}

}  // namespace

TEST(Synthetic, ShapesAndDeterminism) {
  const Dataset a = load_dataset(synthetic_options());
  const Dataset b = load_dataset(synthetic_options());
  EXPECT_EQ(a.name, "synthetic");
  EXPECT_EQ(a.channels, 3);
  EXPECT_EQ(a.height, 10);
  EXPECT_EQ(a.width, 9);
  EXPECT_EQ(a.classes, 5);
  EXPECT_EQ(a.mean, std::vector<float>(3, 0.5f));
  EXPECT_EQ(a.stddev, std::vector<float>(3, 0.29f));
  EXPECT_EQ(a.train.images.sizes(), (std::vector<int64_t>{400, 3, 10, 9}));
  EXPECT_EQ(a.train.images.scalar_type(), torch::kUInt8);
  EXPECT_EQ(a.train.labels.scalar_type(), torch::kInt64);
  EXPECT_EQ(a.test.images.sizes(), (std::vector<int64_t>{100, 3, 10, 9}));
  EXPECT_TRUE(a.train.images.equal(b.train.images));
  EXPECT_TRUE(a.train.labels.equal(b.train.labels));
  EXPECT_TRUE(a.test.images.equal(b.test.images));
  // The test split is a different draw, and another seed gives other data.
  EXPECT_FALSE(a.train.images.narrow(0, 0, 100).equal(a.test.images));
  EXPECT_FALSE(a.train.images.equal(load_dataset(synthetic_options(8)).train.images));
}

TEST(Synthetic, LabelsCoverAllClasses) {
  const Dataset dataset = load_dataset(synthetic_options());
  for (const Split* split : {&dataset.train, &dataset.test}) {
    const at::Tensor counts = torch::bincount(split->labels, {}, dataset.classes);
    EXPECT_EQ(counts.numel(), dataset.classes);
    EXPECT_GT(counts.min().item<int64_t>(), 0);
  }
}

TEST(Synthetic, LabelsAreLearnableFromPixels) {
  // A nearest-class-mean classifier fit on the training split must do far better than chance on the test split.
  const Dataset dataset = load_dataset(synthetic_options());
  const at::Tensor train = dataset.train.images.to(torch::kFloat).flatten(1);
  const at::Tensor test = dataset.test.images.to(torch::kFloat).flatten(1);
  std::vector<at::Tensor> means;
  for (int64_t c = 0; c < dataset.classes; ++c) means.push_back(train.index({dataset.train.labels == c}).mean(0));
  const at::Tensor predicted = torch::cdist(test, torch::stack(means)).argmin(1);
  const double accuracy = predicted.eq(dataset.test.labels).to(torch::kFloat).mean().item<double>();
  EXPECT_GT(accuracy, 0.9);
}

TEST(Synthetic, InvalidOptionsAreErrors) {
  DatasetOptions options = synthetic_options();
  options.synthetic_shape = {28, 28};
  EXPECT_CONTAINS(error_of_call([&] { load_dataset(options); }), "shape");
  options.synthetic_shape = {1, 0, 28};
  EXPECT_THROW(load_dataset(options), distsgd::Error);
  options = synthetic_options();
  options.synthetic_classes = 1;
  EXPECT_CONTAINS(error_of_call([&] { load_dataset(options); }), "classes");
  options = synthetic_options();
  options.synthetic_test_size = 0;
  EXPECT_THROW(load_dataset(options), distsgd::Error);
}

// ---- normalize ----

TEST(Normalize, HandComputedValues) {
  Dataset dataset;
  dataset.name = "two-channel";
  dataset.mean = {0.5f, 0.25f};
  dataset.stddev = {0.5f, 0.25f};
  // [1, 2, 1, 3]: channel 0 = 0, 255, 51; channel 1 = 0, 255, 102.
  const at::Tensor images = torch::tensor({0, 255, 51, 0, 255, 102}, torch::kUInt8).view({1, 2, 1, 3});
  const at::Tensor expected = torch::tensor({-1.0f, 1.0f, -0.6f, -1.0f, 3.0f, 0.6f}).view({1, 2, 1, 3});
  const at::Tensor result = normalize(images, dataset);
  EXPECT_EQ(result.scalar_type(), torch::kFloat);
  EXPECT_TRUE(result.allclose(expected, 1e-5, 1e-6)) << result;

  const at::Tensor one_channel = torch::zeros({1, 1, 1, 3}, torch::kUInt8);
  EXPECT_THROW(normalize(one_channel, dataset), distsgd::Error);
}

// ---- epoch_permutation ----

TEST(EpochPermutation, IsDeterministicPermutationThatChangesWithEpochAndSeed) {
  const std::vector<int64_t> perm = epoch_permutation(1000, 42, 3);
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[size_t(i)], i);
  EXPECT_EQ(perm, epoch_permutation(1000, 42, 3));
  EXPECT_NE(perm, epoch_permutation(1000, 42, 4));
  EXPECT_NE(perm, epoch_permutation(1000, 43, 3));
  EXPECT_TRUE(epoch_permutation(0, 1, 0).empty());
  EXPECT_EQ(epoch_permutation(1, 1, 0), std::vector<int64_t>{0});
}

// ---- ShardedLoader ----

namespace {

// N samples of 1x2x2 whose pixels all equal i mod 256 and whose label is i: a batch reveals the indices it holds.
Dataset index_dataset(int64_t n) {
  Dataset dataset;
  dataset.name = "index";
  dataset.channels = 1;
  dataset.height = dataset.width = 2;
  dataset.classes = n;
  dataset.mean = {0.0f};
  dataset.stddev = {1.0f};
  const at::Tensor index = torch::arange(n, torch::kInt64);
  dataset.train.labels = index;
  dataset.train.images = index.remainder(256).to(torch::kUInt8).view({n, 1, 1, 1}).expand({n, 1, 2, 2}).contiguous();
  dataset.test = dataset.train;
  return dataset;
}

LoaderOptions loader_options(int64_t rank, int64_t world, int64_t batch, int64_t prefetch = 0) {
  LoaderOptions options;
  options.rank = rank;
  options.world = world;
  options.batch_size = batch;
  options.seed = 11;
  options.prefetch = prefetch;
  return options;
}

std::vector<int64_t> to_vector(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

// All batches of one epoch, in order.
std::vector<Batch> drain(ShardedLoader& loader, int64_t epoch, int64_t first_step = 0) {
  loader.start_epoch(epoch, first_step);
  std::vector<Batch> batches;
  while (std::optional<Batch> batch = loader.next()) batches.push_back(std::move(*batch));
  return batches;
}

}  // namespace

TEST(ShardedLoader, ShardsAreDisjointAndCoverTheEpochPrefix) {
  const int64_t n = 47, world = 3, batch = 5;
  const Dataset dataset = index_dataset(n);
  for (int64_t epoch : {0, 1}) {
    std::vector<int64_t> all;
    for (int64_t rank = 0; rank < world; ++rank) {
      ShardedLoader loader(dataset, dataset.train, loader_options(rank, world, batch));
      EXPECT_EQ(loader.steps_per_epoch(), 3);
      const std::vector<int64_t> shard = loader.shard_indices(epoch);
      EXPECT_EQ(shard.size(), 15u);
      all.insert(all.end(), shard.begin(), shard.end());
    }
    EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), all.size()) << "duplicates across ranks";
    const std::vector<int64_t> perm = epoch_permutation(n, 11, epoch);
    std::vector<int64_t> prefix(perm.begin(), perm.begin() + 45);
    std::sort(all.begin(), all.end());
    std::sort(prefix.begin(), prefix.end());
    EXPECT_EQ(all, prefix);
  }
}

TEST(ShardedLoader, DivisibleSizeCoversEverySample) {
  const Dataset dataset = index_dataset(60);
  std::vector<int64_t> all;
  for (int64_t rank = 0; rank < 3; ++rank) {
    const std::vector<int64_t> shard =
        ShardedLoader(dataset, dataset.train, loader_options(rank, 3, 4)).shard_indices(2);
    all.insert(all.end(), shard.begin(), shard.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, to_vector(torch::arange(60, torch::kInt64)));
}

TEST(ShardedLoader, WithoutShuffleServesInOrder) {
  const Dataset dataset = index_dataset(20);
  LoaderOptions options = loader_options(1, 2, 3);
  options.shuffle = false;
  ShardedLoader loader(dataset, dataset.train, options);
  EXPECT_EQ(loader.shard_indices(5), (std::vector<int64_t>{3, 4, 5, 9, 10, 11, 15, 16, 17}));
}

TEST(ShardedLoader, ServedBatchesFollowShardOrder) {
  const Dataset dataset = index_dataset(47);
  for (int64_t prefetch : {0, 1, 4}) {
    ShardedLoader loader(dataset, dataset.train, loader_options(1, 3, 5, prefetch));
    for (int64_t epoch : {0, 1}) {
      const std::vector<Batch> batches = drain(loader, epoch);
      ASSERT_EQ(batches.size(), 3u) << "prefetch " << prefetch;
      std::vector<int64_t> served;
      for (size_t t = 0; t < batches.size(); ++t) {
        const Batch& batch = batches[t];
        EXPECT_EQ(batch.epoch, epoch);
        EXPECT_EQ(batch.step, int64_t(t));
        EXPECT_EQ(batch.images.sizes(), (std::vector<int64_t>{5, 1, 2, 2}));
        EXPECT_EQ(batch.images.scalar_type(), torch::kFloat);
        // Images travel with their labels: pixel = label / 255 after normalization.
        const at::Tensor expected_pixels =
            batch.labels.to(torch::kFloat).div(255).view({5, 1, 1, 1}).expand({5, 1, 2, 2});
        EXPECT_TRUE(batch.images.allclose(expected_pixels));
        const std::vector<int64_t> labels = to_vector(batch.labels);
        served.insert(served.end(), labels.begin(), labels.end());
      }
      EXPECT_EQ(served, loader.shard_indices(epoch)) << "prefetch " << prefetch << " epoch " << epoch;
      EXPECT_FALSE(loader.next().has_value()) << "stays at the end of the epoch";
    }
  }
}

TEST(ShardedLoader, RankBatchesConcatenateToTheSingleWorkerBatch) {
  const Dataset dataset = index_dataset(100);
  const int64_t world = 3, batch = 4;
  ShardedLoader single(dataset, dataset.train, loader_options(0, 1, world * batch, 2));
  const std::vector<Batch> expected = drain(single, 1);
  std::vector<std::vector<Batch>> per_rank;
  for (int64_t rank = 0; rank < world; ++rank) {
    ShardedLoader loader(dataset, dataset.train, loader_options(rank, world, batch, rank));
    per_rank.push_back(drain(loader, 1));
    ASSERT_EQ(per_rank.back().size(), expected.size());
  }
  for (size_t t = 0; t < expected.size(); ++t) {
    std::vector<at::Tensor> labels, images;
    for (const std::vector<Batch>& batches : per_rank) {
      labels.push_back(batches[t].labels);
      images.push_back(batches[t].images);
    }
    EXPECT_TRUE(torch::cat(labels).equal(expected[t].labels)) << "step " << t;
    EXPECT_TRUE(torch::cat(images).equal(expected[t].images)) << "step " << t;
  }
}

TEST(ShardedLoader, StartEpochSkipsToFirstStep) {
  const Dataset dataset = index_dataset(50);
  for (int64_t prefetch : {0, 3}) {
    ShardedLoader loader(dataset, dataset.train, loader_options(0, 2, 5, prefetch));
    ASSERT_EQ(loader.steps_per_epoch(), 5);
    const std::vector<int64_t> shard = loader.shard_indices(4);
    const std::vector<Batch> batches = drain(loader, 4, 3);
    ASSERT_EQ(batches.size(), 2u);
    EXPECT_EQ(batches[0].step, 3);
    EXPECT_EQ(to_vector(batches[0].labels), std::vector<int64_t>(shard.begin() + 15, shard.begin() + 20));
    EXPECT_EQ(to_vector(batches[1].labels), std::vector<int64_t>(shard.begin() + 20, shard.begin() + 25));
    EXPECT_TRUE(drain(loader, 4, 5).empty());
    EXPECT_THROW(loader.start_epoch(4, 6), distsgd::Error);
    // Restarting mid-epoch discards what was prepared for the old epoch.
    loader.start_epoch(0);
    ASSERT_TRUE(loader.next().has_value());
    loader.start_epoch(1, 1);
    const std::optional<Batch> restarted = loader.next();
    ASSERT_TRUE(restarted.has_value());
    EXPECT_EQ(restarted->epoch, 1);
    EXPECT_EQ(restarted->step, 1);
    const std::vector<int64_t> shard1 = loader.shard_indices(1);
    EXPECT_EQ(to_vector(restarted->labels), std::vector<int64_t>(shard1.begin() + 5, shard1.begin() + 10));
  }
}

TEST(ShardedLoader, DestroyingMidEpochDoesNotHang) {
  const Dataset dataset = index_dataset(400);
  std::future<void> done = std::async(std::launch::async, [&] {
    for (int64_t consumed : {0, 1, 3}) {
      ShardedLoader loader(dataset, dataset.train, loader_options(0, 1, 4, 2));
      loader.start_epoch(0);
      for (int64_t i = 0; i < consumed; ++i) loader.next();
    }  // the background thread is blocked on a full queue here
  });
  if (done.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    ADD_FAILURE() << "destroying a loader mid-epoch hung";
    std::fflush(nullptr);
    std::_Exit(1);  // the hung thread cannot be joined
  }
  done.get();
}

TEST(ShardedLoader, BackgroundErrorsAreRethrownByNext) {
  Dataset dataset = index_dataset(20);
  dataset.mean = {0.0f, 0.0f};  // two channels for one-channel images: normalize throws in the worker thread
  dataset.stddev = {1.0f, 1.0f};
  for (int64_t prefetch : {0, 2}) {
    ShardedLoader loader(dataset, dataset.train, loader_options(0, 1, 4, prefetch));
    loader.start_epoch(0);
    EXPECT_THROW(loader.next(), distsgd::Error) << "prefetch " << prefetch;
  }
}

TEST(ShardedLoader, InvalidOptionsAreErrors) {
  const Dataset dataset = index_dataset(47);
  EXPECT_THROW(ShardedLoader(dataset, dataset.train, loader_options(0, 1, 0)), distsgd::Error);
  EXPECT_THROW(ShardedLoader(dataset, dataset.train, loader_options(3, 3, 5)), distsgd::Error);
  EXPECT_THROW(ShardedLoader(dataset, dataset.train, loader_options(-1, 3, 5)), distsgd::Error);
  EXPECT_THROW(ShardedLoader(dataset, dataset.train, loader_options(0, 3, 5, -1)), distsgd::Error);
  const std::string message = error_of_call([&] { ShardedLoader(dataset, dataset.train, loader_options(0, 4, 12)); });
  EXPECT_CONTAINS(message, "47 samples");
  EXPECT_CONTAINS(message, "too small");
  EXPECT_CONTAINS(message, "48");
  ShardedLoader not_started(dataset, dataset.train, loader_options(0, 1, 5));
  EXPECT_THROW(not_started.next(), distsgd::Error);
}
