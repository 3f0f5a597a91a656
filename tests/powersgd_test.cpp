// PowerSGD's compressor (algo/compression/powersgd.hpp): which tensors it compresses (the hook's rule), its values
// against PyTorch 1.13's powerSGD_hook on the same tensors and seed (tests/fixtures/powersgd_hook.json, written by
// tests/fixtures/powersgd_hook_fixture.py with the hook itself on two Gloo processes), and its invariants: at full
// rank it is an exact allreduce, and error feedback loses no gradient.
#include "distsgd/algo/compression/powersgd.hpp"
#include "distsgd/comm/gloo_communicator.hpp"
#include "distsgd/core/powersgd_plan.hpp"
#include "distsgd/models/model.hpp"
#include "loopback_ranks.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <iostream>
#include <mutex>
#include <thread>

namespace compression = distsgd::algo::compression;

namespace powersgd_test {

// Runs body(worker, communicator) on `workers` threads of this process; returns the first failure ("" when none).
std::string run_workers(int64_t workers, const std::function<void(int64_t, distsgd::comm::Communicator&)>& body) {
  return distsgd::testing::run_loopback_ranks(workers, workers, std::chrono::milliseconds(20000), body);
}

at::Tensor floats_of(const nlohmann::json& values) {
  return torch::tensor(values.get<std::vector<float>>(), torch::kFloat);
}

double max_difference(const at::Tensor& a, const at::Tensor& b) {
  EXPECT_EQ(a.numel(), b.numel());
  if (a.numel() != b.numel()) return 1e30;
  return a.numel() == 0 ? 0.0 : (a - b).abs().max().item<double>();
}

std::vector<std::vector<int64_t>> lenet5_shapes() {
  auto model = distsgd::models::make_model({"lenet5"}, {});
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& p : model->parameters()) shapes.emplace_back(p.sizes().begin(), p.sizes().end());
  return shapes;
}

}  // namespace powersgd_test

using powersgd_test::floats_of;
using powersgd_test::max_difference;
using powersgd_test::run_workers;

// lenet5: conv1 6x25, conv2 16x150, fc1 120x400, fc2 84x120, fc3 10x84, five biases. At rank 2 every matrix passes
// the hook's test ((n + m) r * 2 < n m); at rank 8 conv1 (clamped to 6), conv2 and fc3 do not and go uncompressed.
TEST(PowerSgdPlan, FollowsTheHooksRuleOnLenet5) {
  const auto shapes = powersgd_test::lenet5_shapes();
  const auto two = distsgd::plan_powersgd(shapes, 2, 2);
  EXPECT_EQ(two.total_floats, 61706);
  EXPECT_EQ(two.compressed.size(), 5u);
  EXPECT_EQ(two.uncompressed_floats, 6 + 16 + 120 + 84 + 10);
  EXPECT_EQ(two.p_floats, 2 * (6 + 16 + 120 + 84 + 10));
  EXPECT_EQ(two.q_floats, 2 * (25 + 150 + 400 + 120 + 84));
  EXPECT_EQ(two.floats_allreduced(), 2266);
  EXPECT_DOUBLE_EQ(two.matmul_flops(), 3 * 2.0 * 2 * (6 * 25 + 16 * 150 + 120 * 400 + 84 * 120 + 10 * 84));

  const auto eight = distsgd::plan_powersgd(shapes, 8, 2);
  ASSERT_EQ(eight.compressed.size(), 2u);
  EXPECT_EQ(eight.compressed[0].rows, 120);
  EXPECT_EQ(eight.compressed[1].rows, 84);
  EXPECT_EQ(eight.p_floats + eight.q_floats, 8 * (120 + 400 + 84 + 120));
  EXPECT_EQ(eight.uncompressed_floats, 150 + 2400 + 840 + 236);
  EXPECT_EQ(eight.floats_allreduced(), 9418);
  // fc1 is compressed up to rank 46 (520 r * 2 < 48000); nothing is at rank 47.
  EXPECT_EQ(distsgd::largest_compressing_rank(shapes, 2), 46);
  EXPECT_TRUE(distsgd::plan_powersgd(shapes, 47, 2).compressed.empty());
}

// The hook groups compressed matrices by shape, in order of first appearance, and clamps the rank per tensor.
TEST(PowerSgdPlan, GroupsByShapeAndClampsTheRank) {
  const auto plan = distsgd::plan_powersgd({{12, 10}, {12}, {6, 2, 3, 3}, {3, 2}, {12, 10}, {20, 16}}, 2, 2);
  std::vector<int64_t> order;
  for (const auto& t : plan.compressed) order.push_back(t.index);
  EXPECT_EQ(order, (std::vector<int64_t>{0, 4, 2, 5}));
  EXPECT_EQ(plan.uncompressed, (std::vector<int64_t>{1, 3}));
  const auto clamped = distsgd::plan_powersgd({{3, 40}}, 8, 0);
  ASSERT_EQ(clamped.compressed.size(), 1u);
  EXPECT_EQ(clamped.compressed[0].rank, 3);
}

// Two workers, ranks 1 and 2 (Gram-Schmidt) and 4 (QR), two plain steps then three compressed ones (the first
// draws Q from the seeded generator, the others warm-start): every output, worker 0's error memory, and the P and
// Q buffers as the hook computed them. The same libtorch runs both sides; the tolerance covers summation order.
TEST(PowerSgdHook, MatchesPyTorch113OnTwoWorkers) {
  const auto fixture = nlohmann::json::parse(
      distsgd::testing::read_file(std::string(DISTSGD_SOURCE_DIR) + "/tests/fixtures/powersgd_hook.json"));
  const auto shapes = fixture["shapes"].get<std::vector<std::vector<int64_t>>>();
  const auto& inputs = fixture["inputs"];
  const int64_t steps = static_cast<int64_t>(inputs.size());
  double largest = 0;  // difference from the hook over every value compared
  for (const auto& c : fixture["cases"]) {
    compression::PowerSgdOptions options;
    options.rank = c["rank"].get<int64_t>();
    options.start_step = fixture["start"].get<int64_t>();
    options.min_compression_rate = fixture["min_compression_rate"].get<double>();
    options.seed = fixture["seed"].get<uint64_t>();
    std::vector<at::Tensor> outputs(static_cast<size_t>(steps)), errors(outputs.size()), ps(outputs.size()),
        qs(outputs.size());
    const auto failure = run_workers(2, [&](int64_t worker, distsgd::comm::Communicator& comm) {
      compression::PowerSgdCompressor compressor(shapes, options);
      for (int64_t step = 0; step < steps; ++step) {
        auto gradient = floats_of(inputs[static_cast<size_t>(step)][static_cast<size_t>(worker)]);
        compressor.allreduce_mean(gradient, step, &comm);
        if (worker != 0) continue;
        outputs[static_cast<size_t>(step)] = gradient;
        if (compressor.error().defined()) {
          errors[static_cast<size_t>(step)] = compressor.error().clone();
          ps[static_cast<size_t>(step)] = compressor.p().clone();
          qs[static_cast<size_t>(step)] = compressor.q().clone();
        }
      }
    });
    ASSERT_EQ(failure, "");
    const std::string rank = "rank " + std::to_string(options.rank);
    for (int64_t step = 0; step < options.start_step; ++step) {
      const auto mean =
          (floats_of(inputs[static_cast<size_t>(step)][0]) + floats_of(inputs[static_cast<size_t>(step)][1])) / 2;
      EXPECT_LT(max_difference(outputs[static_cast<size_t>(step)], mean), 1e-6) << rank << ", plain step " << step;
      EXPECT_FALSE(errors[static_cast<size_t>(step)].defined()) << rank << ": no error memory before the start";
    }
    for (const auto& expected : c["steps"]) {
      const auto step = static_cast<size_t>(expected["step"].get<int64_t>());
      const std::string where = rank + ", step " + std::to_string(step);
      const double differences[] = {max_difference(outputs[step], floats_of(expected["output"])),
                                    max_difference(errors[step], floats_of(expected["error"])),
                                    max_difference(ps[step], floats_of(expected["p"])),
                                    max_difference(qs[step], floats_of(expected["q"]))};
      EXPECT_LT(differences[0], 2e-5) << where << ": output";
      EXPECT_LT(differences[1], 2e-5) << where << ": error feedback";
      EXPECT_LT(differences[2], 2e-5) << where << ": P";
      EXPECT_LT(differences[3], 2e-5) << where << ": Q";
      for (double d : differences) largest = std::max(largest, d);
    }
  }
  std::cout << "largest difference from powerSGD_hook: " << largest << std::endl;
}

// With the rank at min(n, m) the approximation P Q^T is the exact mean (P spans M's columns, or Q its rows), here on
// three workers with every tensor compressed (a rate of 0 compresses every matrix).
TEST(PowerSgdInvariants, FullRankIsAnExactAllreduce) {
  const std::vector<std::vector<int64_t>> shapes{{5, 9}, {7}, {9, 3, 2}, {4, 4}, {30, 6}};
  compression::PowerSgdOptions options;
  options.rank = 9;
  options.start_step = 0;
  options.min_compression_rate = 0;
  ASSERT_EQ(distsgd::plan_powersgd(shapes, options.rank, 0).compressed.size(), 4u);
  constexpr int64_t kWorkers = 3, kSteps = 3;
  auto gradient_of = [](int64_t step, int64_t worker) {
    return torch::randn({45 + 7 + 54 + 16 + 180},
                        torch::Generator(at::detail::createCPUGenerator(100 * step + worker)));
  };
  std::vector<at::Tensor> outputs(kSteps);
  const auto failure = run_workers(kWorkers, [&](int64_t worker, distsgd::comm::Communicator& comm) {
    compression::PowerSgdCompressor compressor(shapes, options);
    for (int64_t step = 0; step < kSteps; ++step) {
      auto g = gradient_of(step, worker);
      compressor.allreduce_mean(g, step, &comm);
      if (worker == 0) outputs[static_cast<size_t>(step)] = g;
    }
  });
  ASSERT_EQ(failure, "");
  for (int64_t step = 0; step < kSteps; ++step) {
    // Exact at every step, so the error memory stays at rounding level and the next mean is the plain one too.
    at::Tensor mean = torch::zeros({302});
    for (int64_t w = 0; w < kWorkers; ++w) mean += gradient_of(step, w);
    mean /= kWorkers;
    EXPECT_LT(max_difference(outputs[static_cast<size_t>(step)], mean), 1e-4) << "step " << step;
  }
}

// e_t = g_t + e_{t-1} - out_t, so over any number of steps each worker's delivered means plus its final error
// memory add up to the gradients it computed (from the first compressed step on): compression delays gradient, it
// loses none. Two workers at rank 1.
TEST(PowerSgdInvariants, ErrorFeedbackLosesNoGradient) {
  const std::vector<std::vector<int64_t>> shapes{{16, 12}, {16}, {8, 3, 3, 3}, {40, 20}};
  compression::PowerSgdOptions options;
  options.rank = 1;
  options.start_step = 1;
  constexpr int64_t kSteps = 6;
  const int64_t numel = 192 + 16 + 216 + 800;
  std::vector<at::Tensor> sent_sum(2), gradient_sum(2), final_error(2);
  const auto failure = run_workers(2, [&](int64_t worker, distsgd::comm::Communicator& comm) {
    compression::PowerSgdCompressor compressor(shapes, options);
    auto sent = torch::zeros({numel}, torch::kDouble), computed = torch::zeros({numel}, torch::kDouble);
    for (int64_t step = 0; step < kSteps; ++step) {
      auto g = torch::randn({numel}, torch::Generator(at::detail::createCPUGenerator(10 * step + worker)));
      const bool compressed = compressor.compressing_at(step);  // before: the exact mean, nothing kept back
      if (compressed) computed += g.to(torch::kDouble);
      compressor.allreduce_mean(g, step, &comm);
      if (compressed) sent += g.to(torch::kDouble);
    }
    sent_sum[static_cast<size_t>(worker)] = sent;
    gradient_sum[static_cast<size_t>(worker)] = computed;
    final_error[static_cast<size_t>(worker)] = compressor.error().to(torch::kDouble);
  });
  ASSERT_EQ(failure, "");
  for (size_t w = 0; w < 2; ++w) {
    EXPECT_GT(final_error[w].abs().max().item<double>(), 0.1) << "rank 1 leaves a real error behind";
    EXPECT_LT(max_difference(sent_sum[w] + final_error[w], gradient_sum[w]), 1e-4) << "worker " << w;
  }
}

// A compressor restored from another's saved state continues exactly as the original does (checkpoints).
TEST(PowerSgdInvariants, SavedStateContinuesTheSameSteps) {
  const std::vector<std::vector<int64_t>> shapes{{16, 12}, {16}, {40, 20}};
  compression::PowerSgdOptions options;
  options.rank = 2;
  options.start_step = 0;
  const int64_t numel = 192 + 16 + 800;
  auto gradient_of = [&](int64_t step) {
    return torch::randn({numel}, torch::Generator(at::detail::createCPUGenerator(7 + step)));
  };
  compression::PowerSgdCompressor original(shapes, options);
  for (int64_t step = 0; step < 3; ++step) {
    auto g = gradient_of(step);
    original.allreduce_mean(g, step, nullptr);
  }
  distsgd::algo::AlgorithmState state;
  original.save_state(state);
  compression::PowerSgdCompressor restored(shapes, options);
  restored.load_state(state);
  for (int64_t step = 3; step < 5; ++step) {
    auto a = gradient_of(step), b = gradient_of(step);
    original.allreduce_mean(a, step, nullptr);
    restored.allreduce_mean(b, step, nullptr);
    EXPECT_TRUE(a.equal(b)) << "step " << step;
  }
}
