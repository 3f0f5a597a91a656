// What a run takes of its host (issue 26, item 2): a run that cannot fit in memory is refused before any process
// starts, with one line naming the estimate and the available memory; cores shared thinner than a thread each get a
// warning saying by how much; the processes of a host share one read-only, memory-mapped copy of the dataset, and a
// parameter server takes only the dataset's description.
#include "distsgd/train/host_resources.hpp"
#include "distsgd/data/dataset.hpp"
#include "distsgd/data/dataset_cache.hpp"
#include "distsgd/train/memory_estimate.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace {

using distsgd::testing::count_of;
using distsgd::testing::run_shell;
using distsgd::testing::summary_of;
using distsgd::testing::TempDir;

const std::string kSmallTask =
    " --dataset synthetic --synthetic-shape 1x28x28 --synthetic-classes 4 --synthetic-train-size 512 "
    "--synthetic-test-size 128 --model lenet5 --batch-size 16 --threads 1 --seed 3 --lr 0.02 --momentum 0 "
    "--epochs 1 --progress-seconds 1000 --no-checkpoint --timeout 30";

distsgd::data::DatasetOptions small_synthetic() {
  distsgd::data::DatasetOptions o;
  o.name = "synthetic";
  o.synthetic_train_size = 300;
  o.synthetic_test_size = 50;
  o.seed = 11;
  return o;
}

// Whether `address` lies in a mapping of the file `path` (/proc/self/maps names the file of each mapping).
bool mapped_from(const void* address, const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto a = reinterpret_cast<uintptr_t>(address);
  while (std::getline(maps, line)) {
    if (line.find(path) == std::string::npos) continue;
    uintptr_t begin = 0, end = 0;
    char dash;
    std::istringstream(line) >> std::hex >> begin >> dash >> end;
    if (a >= begin && a < end) return true;
  }
  return false;
}

std::vector<std::string> cache_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".tensors") files.push_back(entry.path().string());
  }
  return files;
}

// 20 GB of MemAvailable here: ten times as many workers as fit in it at 45 MB each.
int64_t workers_that_cannot_fit() {
  return static_cast<int64_t>(std::ceil(10 * distsgd::train::available_memory_bytes() / 45e6)) + 1;
}

TEST(HostResources, ARunThatCannotFitInMemoryIsRefusedBeforeAnyProcessStarts) {
  TempDir dir;
  const int64_t workers = workers_that_cannot_fit();
  const auto r = run_shell(std::string(DISTSGD_BINARY) + " train --algo asp --servers 1 --workers " +
                           std::to_string(workers) + kSmallTask + " --out " + (dir / "run") + " 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find("distsgd: error: " + std::to_string(workers) + " workers and 1 servers of "),
            std::string::npos)
      << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find(" need about "), std::string::npos) << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find(" available (MemAvailable): use fewer processes"), std::string::npos)
      << r.output.substr(0, 2000);
  EXPECT_EQ(r.output.find("launching"), std::string::npos) << r.output.substr(0, 2000);
  EXPECT_EQ(count_of(r.output, "distsgd: error:"), 1) << r.output.substr(0, 2000);
}

TEST(HostResources, EstimateCountsEachProcessAndTheSharedDatasetOnce) {
  distsgd::TrainConfig c;
  c.workers = 4;
  c.servers = 1;
  const auto shared = distsgd::train::processes_memory_estimate(c, 1'000'000, 784, 50e6, true);
  const auto private_copies = distsgd::train::processes_memory_estimate(c, 1'000'000, 784, 50e6, false);
  EXPECT_GT(private_copies.per_worker - shared.per_worker, 50e6);  // a private copy, decoded from the file's bytes
  EXPECT_DOUBLE_EQ(private_copies.per_server, shared.per_server);  // a server holds no samples either way
  EXPECT_DOUBLE_EQ(shared.shared - private_copies.shared, 50e6);
  EXPECT_DOUBLE_EQ(shared.total, 4 * shared.per_worker + shared.per_server + shared.shared);
  // The virtual cluster's estimate is the same pieces without a process's baseline.
  EXPECT_DOUBLE_EQ(
      distsgd::train::virtual_memory_estimate(c, 1'000'000, 784),
      4 * distsgd::train::worker_state_bytes(c, 1'000'000, 784) + distsgd::train::server_state_bytes(c, 1'000'000));
}

TEST(HostResources, OversubscribedCoresGetOneWarningSayingByHowMuch) {
  using distsgd::train::oversubscription_warning;
  EXPECT_EQ(oversubscription_warning(5, 1, 2),
            "distsgd: warning: 5 processes x 1 compute thread = 5 threads on 2 cores (2.5x oversubscribed): each "
            "process runs slower than on a core of its own, and throughput figures measure the contention");
  EXPECT_NE(oversubscription_warning(2, 4, 2).find("2 processes x 4 compute threads = 8 threads on 2 cores (4.0x"),
            std::string::npos);
  EXPECT_EQ(oversubscription_warning(2, 1, 2), "");
  EXPECT_EQ(oversubscription_warning(4, 2, 8), "");
}

TEST(DatasetCache, ProcessesMapOneReadOnlyCopyOfTheDecodedDataset) {
  TempDir dir;
  const auto options = small_synthetic();
  const auto decoded = distsgd::data::load_dataset(options);
  const auto first = distsgd::data::load_shared_dataset(options, dir.str());
  auto files = cache_files(dir.str());
  ASSERT_EQ(files.size(), 1u);
  struct stat written {};
  ASSERT_EQ(::stat(files[0].c_str(), &written), 0);
  const auto second = distsgd::data::load_shared_dataset(options, dir.str());
  struct stat reused {};
  ASSERT_EQ(::stat(files[0].c_str(), &reused), 0);
  EXPECT_EQ(written.st_ino, reused.st_ino);  // mapped again, not written again
  for (const auto* d : {&first, &second}) {
    EXPECT_EQ(d->name, decoded.name);
    EXPECT_EQ(d->classes, decoded.classes);
    EXPECT_EQ(std::vector<int64_t>({d->channels, d->height, d->width}),
              std::vector<int64_t>({decoded.channels, decoded.height, decoded.width}));
    EXPECT_EQ(d->mean, decoded.mean);
    EXPECT_TRUE(torch::equal(d->train.images, decoded.train.images));
    EXPECT_TRUE(torch::equal(d->train.labels, decoded.train.labels));
    EXPECT_TRUE(torch::equal(d->test.images, decoded.test.images));
    EXPECT_TRUE(torch::equal(d->test.labels, decoded.test.labels));
    // The samples are the file's pages (the page cache's, shared by every process that maps them).
    EXPECT_TRUE(mapped_from(d->train.images.data_ptr(), files[0]));
    EXPECT_TRUE(mapped_from(d->test.labels.data_ptr(), files[0]));
  }
  EXPECT_EQ(distsgd::data::dataset_bytes(first), distsgd::data::dataset_bytes(decoded));

  // Another dataset gets its own file; a damaged file is written again.
  auto other = options;
  other.seed = 12;
  EXPECT_FALSE(torch::equal(distsgd::data::load_shared_dataset(other, dir.str()).train.images, first.train.images));
  EXPECT_EQ(cache_files(dir.str()).size(), 2u);
  std::filesystem::resize_file(files[0], 100);
  EXPECT_TRUE(torch::equal(distsgd::data::load_shared_dataset(options, dir.str()).train.images, decoded.train.images));
}

TEST(DatasetCache, AServerTakesOnlyTheDescription) {
  TempDir dir;
  const auto options = small_synthetic();
  for (const std::string& cache : {dir.str(), std::string()}) {
    const auto d = distsgd::data::dataset_description(options, cache);
    EXPECT_EQ(d.name, "synthetic");
    EXPECT_EQ(d.classes, 10);
    EXPECT_EQ(std::vector<int64_t>({d.channels, d.height, d.width}), std::vector<int64_t>({1, 28, 28}));
    EXPECT_FALSE(d.train.images.defined());
    EXPECT_EQ(d.test.size(), 0);
  }
}

TEST(DatasetCache, AnUnwritableDirectoryCostsAPrivateCopyNotTheRun) {
  TempDir dir;
  const std::string file = dir / "not-a-directory";
  std::ofstream(file) << "x";
  const auto d = distsgd::data::load_shared_dataset(small_synthetic(), file + "/cache");
  EXPECT_EQ(d.train.size(), 300);
}

// A cache directory that cannot be written: the launcher says so once, and every process loads its own copy.
TEST(DatasetCache, AnUnwritableDirectoryIsSaidOnceAndTheRunGoesOn) {
  TempDir dir;
  const std::string file = dir / "not-a-directory";
  std::ofstream(file) << "x";
  const auto r =
      run_shell("DISTSGD_DATA_CACHE=" + file + "/cache " + DISTSGD_BINARY +
                " train --algo asp --servers 1 --workers 2" + kSmallTask + " --out " + (dir / "run") + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(count_of(r.output, "cannot use the dataset cache in " + file + "/cache (Not a directory)"), 1) << r.output;
}

// A real run: the launcher decodes the dataset once into the cache, the workers map it, and the run trains exactly
// as with private copies.
TEST(DatasetCache, TheWorkersOfARunShareOneCacheFileAndTrainTheSame) {
  TempDir dir;
  std::filesystem::create_directories(dir / "cache");
  const std::string flags = " train --algo arsgd --workers 2" + kSmallTask;
  const auto shared = run_shell("DISTSGD_DATA_CACHE=" + (dir / "cache") + " " + DISTSGD_BINARY + flags + " --out " +
                                (dir / "shared") + " 2>&1");
  ASSERT_EQ(shared.exit_code, 0) << shared.output;
  const auto private_copies = run_shell(std::string("DISTSGD_DATA_CACHE=off ") + DISTSGD_BINARY + flags + " --out " +
                                        (dir / "private") + " 2>&1");
  ASSERT_EQ(private_copies.exit_code, 0) << private_copies.output;
  EXPECT_EQ(cache_files(dir / "cache").size(), 1u);
  EXPECT_EQ(summary_of(dir / "shared")["test_loss"], summary_of(dir / "private")["test_loss"]);
  // Two processes of one compute thread each: more than the cores of a 1-core host only.
  EXPECT_EQ(shared.output.find("x oversubscribed") != std::string::npos, std::thread::hardware_concurrency() < 2)
      << shared.output;
}

}  // namespace
