// Deep Gradient Compression: the compressor against a step-by-step reference (exact top-k, residual, momentum
// correction, factor masking, clipping), the wire format, and runs through the program: density 1 equals plain
// SGD, sparse runs send what the density says, and BSP with DGC trains lenet5 on Fashion-MNIST.
#include "distsgd/algo/compression/dgc.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/train/checkpoint.hpp"
#include "test_util.hpp"
#include "trained_parameters.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

namespace compression = distsgd::algo::compression;
using distsgd::testing::parameters_of;
using distsgd::testing::read_file;
using distsgd::testing::run_distsgd;
using distsgd::testing::summary_of;
using distsgd::testing::TempDir;

TEST(DgcSchedule, DensityWarmsUpExponentiallyThenHoldsTheTarget) {
  // Lin et al.: sparsity 75%, 93.75%, 98.4375%, 99.6%, then 99.9%, one stage per epoch of four.
  EXPECT_DOUBLE_EQ(compression::dgc_density(0.001, 0.0, 4), 0.25);
  EXPECT_DOUBLE_EQ(compression::dgc_density(0.001, 1.5, 4), 0.0625);
  EXPECT_DOUBLE_EQ(compression::dgc_density(0.001, 2.0, 4), 0.015625);
  EXPECT_DOUBLE_EQ(compression::dgc_density(0.001, 3.99, 4), 0.004);
  EXPECT_DOUBLE_EQ(compression::dgc_density(0.001, 4.0, 4), 0.001);
  EXPECT_DOUBLE_EQ(compression::dgc_density(0.001, 0.3, 1), 0.0625);  // a 1-epoch warm-up: stages of a quarter epoch
  EXPECT_DOUBLE_EQ(compression::dgc_density(0.001, 0.0, 0), 0.001);   // no warm-up
  EXPECT_DOUBLE_EQ(compression::dgc_density(0.01, 3.5, 4), 0.01);     // never sparser than the target
  EXPECT_EQ(compression::dgc_entries(48000, 0.001), 48);
  EXPECT_EQ(compression::dgc_entries(6, 0.001), 1);  // every tensor sends at least one entry
  EXPECT_EQ(compression::dgc_entries(10, 1.0), 10);
}

// Three steps of the compressor against the spec's rules computed here with plain tensor operations.
TEST(DgcCompressor, SendsExactlyTheTopKOfEachTensorAndKeepsTheResidual) {
  torch::manual_seed(3);
  std::vector<distsgd::optim::ParameterSlot> slots{{"a", 0, 50}, {"b", 50, 7}, {"c", 57, 200}};
  compression::DgcOptions options;
  options.density = 0.05;  // k = 3, 1, 10
  options.momentum = 0.9;
  options.weight_decay = 0.01;
  options.clip_norm = 8.0;
  options.workers = 4;  // threshold 4
  compression::DgcCompressor compressor(slots, options);

  auto x = torch::randn({257});
  auto u = torch::zeros({257}), v = torch::zeros({257});
  bool clipped = false;
  for (int step = 0; step < 3; ++step) {
    auto grad = torch::randn({257}) * (step == 1 ? 3.0 : 0.2);  // step 1 exceeds the clipping threshold
    auto sparse = compressor.compress(grad, x, options.density);

    auto g = grad + 0.01 * x;
    const double norm = g.norm().item<double>();
    if (norm > 4.0) {
      g = g * (4.0 / norm);
      clipped = true;
    }
    u = 0.9 * u + g;
    v = v + u;
    std::vector<int64_t> expected;
    for (const auto& slot : slots) {
      const int64_t k = compression::dgc_entries(slot.numel, options.density);
      std::vector<int64_t> order(static_cast<size_t>(slot.numel));
      for (int64_t i = 0; i < slot.numel; ++i) order[static_cast<size_t>(i)] = slot.offset + i;
      auto magnitude = v.abs();
      std::sort(order.begin(), order.end(),
                [&](int64_t a, int64_t b) { return magnitude[a].item<float>() > magnitude[b].item<float>(); });
      std::vector<int64_t> top(order.begin(), order.begin() + k);
      std::sort(top.begin(), top.end());
      expected.insert(expected.end(), top.begin(), top.end());
    }
    ASSERT_EQ(sparse.size(), 3 + 1 + 10);
    std::vector<int64_t> got(sparse.indices.data_ptr<int64_t>(), sparse.indices.data_ptr<int64_t>() + sparse.size());
    EXPECT_EQ(got, expected) << "step " << step;
    auto idx = torch::tensor(expected, torch::kInt64);
    EXPECT_TRUE(torch::allclose(sparse.values, v.index_select(0, idx), 1e-5, 1e-6)) << "values sent are v's";
    // Sent entries leave v and u (factor masking); the rest stays, to be sent later.
    v.index_fill_(0, idx, 0);
    u.index_fill_(0, idx, 0);
    EXPECT_TRUE(torch::allclose(compressor.residual(), v, 1e-5, 1e-6)) << "residual after step " << step;
    EXPECT_TRUE(torch::allclose(compressor.momentum(), u, 1e-5, 1e-6)) << "momentum after step " << step;
    EXPECT_TRUE(torch::all(compressor.residual().index_select(0, idx).eq(0)).item<bool>());
  }
  EXPECT_TRUE(clipped) << "the test must exercise clipping";
  EXPECT_GT(compressor.residual().abs().sum().item<double>(), 0) << "unsent entries are kept";
}

TEST(DgcWire, PackUnpackAndScatterIntoAShard) {
  compression::SparseGradient sparse{torch::tensor({3, 9, 12, 40}, torch::kInt64),
                                     torch::tensor({1.5f, -2.0f, 0.25f, 7.0f})};
  auto packed = compression::pack(sparse);
  ASSERT_EQ(packed.numel(), 8);
  auto back = compression::unpack(packed);
  EXPECT_TRUE(torch::equal(back.indices, sparse.indices));
  EXPECT_TRUE(torch::equal(back.values, sparse.values));
  // A shard holding [8, 48) of the flat vector.
  auto shard = torch::zeros({40});
  compression::add_sparse(shard, compression::SparseGradient{back.indices.narrow(0, 1, 3), back.values.narrow(0, 1, 3)},
                          8);
  EXPECT_FLOAT_EQ(shard[1].item<float>(), -2.0f);
  EXPECT_FLOAT_EQ(shard[4].item<float>(), 0.25f);
  EXPECT_FLOAT_EQ(shard[32].item<float>(), 7.0f);
  EXPECT_FLOAT_EQ(shard.abs().sum().item<float>(), 9.25f);
  EXPECT_THROW(compression::add_sparse(shard, sparse, 8), distsgd::Error) << "index 3 is outside the shard";
}

namespace {

const std::string kDgcSmallRun =
    " --model lenet5 --dataset synthetic --synthetic-train-size 3840 --synthetic-test-size 64 --epochs 1 "
    "--threads 1 --no-checkpoint --progress-seconds 1000 --seed 5 --max-steps 20";

// Bytes of one step's DGC message for lenet5 at this density: 8 per entry (value + index).
int64_t lenet5_dgc_bytes_per_step(double density) {
  auto model = distsgd::models::make_model({}, {});
  distsgd::optim::FlatParameters flat(*model);
  int64_t entries = 0;
  for (const auto& slot : flat.slots()) entries += compression::dgc_entries(slot.numel, density);
  return 8 * entries;
}

}  // namespace

// At density 1 every entry is sent every step and factor masking clears the momentum it carried, so DGC is plain
// SGD (with weight decay): 3 workers of batch 16 equal one process of batch 48 with momentum 0. This runs the
// whole path: selection, packing, routing to shards (memory sharding splits tensors), the allgather.
TEST(DgcRuns, DensityOneEqualsPlainSgdForBspAndAllreduce) {
  TempDir dir;
  auto ref =
      run_distsgd("train --algo sgd --batch-size 48 --lr 0.05 --momentum 0" + kDgcSmallRun + " --out " + (dir / "ref"));
  ASSERT_EQ(ref.exit_code, 0) << ref.output;
  const auto reference = parameters_of(dir / "ref");
  for (const std::string algo : {"--algo bsp --servers 3 --sharding memory", "--algo arsgd"}) {
    auto r = run_distsgd("train " + algo +
                         " --workers 3 --batch-size 16 --lr 0.05 --momentum 0.9 --compress dgc "
                         "--density 1 --dgc-warmup-epochs 0 --dgc-clip-norm 0" +
                         kDgcSmallRun + " --out " + (dir / "run") + " --overwrite");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto params = parameters_of(dir / "run");
    const double error = ((params - reference).norm() / reference.norm()).item<double>();
    EXPECT_LT(error, 1e-4) << algo;
  }
}

// Sparse runs of every algorithm DGC applies to: each trains, and each worker sends what the density implies.
TEST(DgcRuns, EachAlgorithmSendsTheDensitysShare) {
  TempDir dir;
  const double density = 0.01;
  const int64_t steps = 20;
  const double sparse_step = static_cast<double>(lenet5_dgc_bytes_per_step(density));
  const double dense_step = 4.0 * 61706;
  for (const std::string algo : {"bsp --servers 2", "asp --servers 2", "ssp --servers 2 --staleness 2", "arsgd"}) {
    const std::string out = dir / "run";
    auto r = run_distsgd("train --algo " + algo +
                         " --workers 2 --batch-size 16 --lr 0.02 --compress dgc "
                         "--density 0.01 --dgc-warmup-epochs 0" +
                         kDgcSmallRun + " --out " + out + " --overwrite");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    auto summary = summary_of(out);
    EXPECT_TRUE(std::isfinite(summary["test_loss"].get<double>())) << algo;
    const double bytes = summary["bytes_sent_per_worker"].get<double>();
    // PS: one message per step to the servers; arsgd: a ring allgather forwards (n-1) = 1 block per step.
    EXPECT_DOUBLE_EQ(bytes, steps * sparse_step) << algo << ": " << summary.dump(2);
    EXPECT_LT(bytes, 0.03 * steps * dense_step) << algo;
  }
}

TEST(DgcRuns, ImpossibleCombinationsAreRefused) {
  auto r = run_distsgd("train --algo easgd --workers 2 --servers 1 --compress dgc" + kDgcSmallRun);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--compress applies to arsgd, bsp, asp, ssp, diloco only (not easgd)"), std::string::npos)
      << r.output;
  r = run_distsgd("train --algo asp --workers 2 --servers 1 --compress dgc --momentum-at server" + kDgcSmallRun);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--momentum-at server"), std::string::npos) << r.output;
  r = run_distsgd("train --algo bsp --workers 2 --servers 1 --compress dgc --density 0" + kDgcSmallRun);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--density must be in (0, 1]"), std::string::npos) << r.output;
}

// The acceptance run: BSP with DGC at density 0.001, 4 workers, 1 server, lenet5 on Fashion-MNIST,
// 2 epochs: test accuracy >= 0.84. The warm-up spans the first epoch, so the second runs at 0.1% throughout. On the
// virtual cluster, as the other acceptance runs (acceptance_test.cpp says why); the real path's bytes are checked by
// DgcRuns.EachAlgorithmSendsTheDensitysShare.
TEST(VirtualDgcAcceptance, BspWithDgcReaches084) {
  if (!distsgd::testing::have_fashion_mnist()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  TempDir dir;
  auto r = run_distsgd(
      "train --algo bsp --servers 1 --workers 4 --compress dgc --density 0.001 "
      "--dgc-warmup-epochs 1 --model lenet5 --dataset fashion-mnist --epochs 2 --batch-size 32 "
      "--lr 0.05 --lr-decay-epochs 1.5 --seed 1 --threads 1 --no-checkpoint --progress-seconds 1000" +
      distsgd::testing::kVirtualLenet5Timing + " --out " + (dir / "run"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto summary = summary_of(dir / "run");
  EXPECT_GE(summary["test_accuracy"].get<double>(), 0.84) << summary.dump(2);
  // The second epoch sent 0.1% of each tensor (at least one entry each) per step.
  std::vector<double> bytes;
  std::istringstream lines(read_file(dir / "run/metrics.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    auto m = nlohmann::json::parse(line);
    if (m.contains("bytes_sent_per_worker")) bytes.push_back(m["bytes_sent_per_worker"].get<double>());
  }
  ASSERT_EQ(bytes.size(), 2u);
  const double steps_per_epoch = 60000 / 128;
  EXPECT_DOUBLE_EQ(bytes[1] - bytes[0], steps_per_epoch * lenet5_dgc_bytes_per_step(0.001));
}
