// `distsgd profile`: a real model measured into a profile the simulator reads back.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>

#include "distsgd/core/host_cores.hpp"
#include "distsgd/sim/platform/model_profile.hpp"
#include "test_util.hpp"

namespace distsgd::testing {
namespace {

TEST(ProfileCommand, MeasuresEveryTensorIntoAProfileTheSimulatorReads) {
  TempDir dir;
  auto r = run_distsgd(
      "profile --model lenet5 --dataset synthetic --synthetic-train-size 256 --batch-size 32 "
      "--threads 1 --repeats 15 --out " +
      (dir / "p.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto profile = sim::load_model_profile(dir / "p.json");
  ASSERT_EQ(profile.tensors.size(), 10u);  // lenet5: 5 layers, weight and bias each
  EXPECT_EQ(profile.tensors[0].name, "conv1.weight");
  EXPECT_EQ(profile.tensors[0].parameters, 150);
  EXPECT_EQ(profile.batch_size, 32);
  EXPECT_EQ(profile.input_shape, (std::vector<int64_t>{1, 28, 28}));  // the data's: a virtual run checks it
  EXPECT_DOUBLE_EQ(profile.gradient_bytes(), 61706.0 * 4);
  EXPECT_GT(profile.update_seconds_per_byte, 0);
  EXPECT_GT(profile.data_seconds, 0);
  // The per-tensor medians add up to about an undisturbed whole iteration, measured separately: between most of
  // the fastest one and a little over the median one.
  const auto json = nlohmann::json::parse(read_file(dir / "p.json"));
  const double fastest = json["iteration_seconds"]["min"].get<double>();
  const double median = json["iteration_seconds"]["median"].get<double>();
  const double parts = profile.forward_seconds() + profile.backward_seconds();
  EXPECT_GT(parts, 0.6 * fastest) << r.output;
  EXPECT_LT(parts, 1.3 * median) << r.output;
  EXPECT_NE(r.output.find("conv2.weight"), std::string::npos);
}

// --ranks-at-once K: the model in K threads at once against one alone; what they complete together, in cores' worth
// (validate's --shared-cores). Bounded by 1 and K; how far from the host's cores depends on its load, so not asserted.
TEST(ProfileCommand, RanksAtOnceMeasureTheCoresTheyGetTogether) {
  TempDir dir;
  auto r = run_distsgd(
      "profile --model lenet5 --dataset synthetic --synthetic-train-size 256 --batch-size 32 --threads 1 --repeats 5 "
      "--ranks-at-once 3 --out " +
      (dir / "p.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto capacity = nlohmann::json::parse(read_file(dir / "p.json"))["compute_capacity"];
  ASSERT_TRUE(capacity.is_object()) << r.output;
  EXPECT_EQ(capacity["ranks"].get<int64_t>(), 3);
  const double alone = capacity["alone_seconds"].get<double>(), together = capacity["together_seconds"].get<double>();
  EXPECT_GT(alone, 0);
  EXPECT_GT(together, 0);
  // Never more than the host has, however the thread alone was slowed.
  const double most = static_cast<double>(std::min<int64_t>(3, host_cores()));
  EXPECT_NEAR(capacity["cores"].get<double>(), std::clamp(3 * alone / together, 1.0, most), 1e-9);
  EXPECT_NE(r.output.find("3 ranks computing at once"), std::string::npos) << r.output;
  EXPECT_EQ(sim::load_model_profile(dir / "p.json").tensors.size(), 10u) << "the profile is read as before";
}

TEST(ProfileCommand, BadInputIsOneClearError) {
  TempDir dir;
  auto r = run_distsgd("profile --model lenet5 --dataset synthetic --repeats 2 --out " + (dir / "p.json"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("distsgd: error: --repeats must be at least 3"), std::string::npos) << r.output;
  r = run_distsgd("profile --model lenet5 --dataset synthetic --ranks-at-once 1 --out " + (dir / "p.json"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("distsgd: error: --ranks-at-once must be at least 2 (got 1)"), std::string::npos) << r.output;
  r = run_distsgd("profile --model lenet5 --device titan-v --ranks-at-once 4 --out " + (dir / "p.json"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("distsgd: error: --ranks-at-once measures this host's cores: it does not go with --device"),
            std::string::npos)
      << r.output;
  r = run_distsgd("profile --model lenet7 --dataset synthetic --out " + (dir / "p.json"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("lenet7"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir / "p.json"));
}

}  // namespace
}  // namespace distsgd::testing
