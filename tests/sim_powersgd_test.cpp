// PowerSGD in the simulator (sim/analytical/powersgd_model.hpp): the analytical form and the discrete-event run against
// a hand-worked step, the traffic of core/powersgd_plan.hpp, and the plain allreduces before --powersgd-start.
#include <gtest/gtest.h>

#include "distsgd/sim/analytical/collective_costs.hpp"
#include "distsgd/sim/analytical/powersgd_model.hpp"
#include "distsgd/sim/des/discrete_event_simulator.hpp"
#include "sim_test_util.hpp"
#include "test_util.hpp"

namespace distsgd::sim {
namespace {

// One 120 x 400 matrix (forward 0.5 s, backward 1 s) and its 120 biases; the update takes 0.25 s, and the matmul
// rate is such that PowerSGD's three products at rank 2 (3 x 2 x 120 x 400 x 2 FLOPs) take 1 s.
ModelProfile matrix_and_bias() {
  ModelProfile p;
  p.model = "matrix and bias";
  p.batch_size = 16;
  TensorProfile w;
  w.name = "w";
  w.parameters = 48000;
  w.forward_seconds = 0.5;
  w.backward_seconds = 1;
  w.shape = {120, 400};
  TensorProfile b;
  b.name = "b";
  b.parameters = 120;
  b.shape = {120};
  p.tensors = {w, b};
  p.update_seconds_per_byte = 0.25 / p.gradient_bytes();
  p.matmul_flops_per_second = 3 * 2.0 * 120 * 400 * 2;
  return p;
}

TEST(SimPowerSgd, StepTrafficIsTwoAllreducesOfNPlusMTimesRPlusTheVectors) {
  const auto step = powersgd_step(matrix_and_bias(), 2);
  EXPECT_DOUBLE_EQ(step.uncompressed_bytes, 4 * 120);
  EXPECT_DOUBLE_EQ(step.p_bytes, 4 * 120 * 2);
  EXPECT_DOUBLE_EQ(step.q_bytes, 4 * 400 * 2);
  EXPECT_DOUBLE_EQ(step.matmul_seconds, 1);
  EXPECT_DOUBLE_EQ(step.error_feedback_seconds, 0.25);
  auto no_rate = matrix_and_bias();
  no_rate.matmul_flops_per_second = 0;
  EXPECT_DOUBLE_EQ(powersgd_step(no_rate, 2).matmul_seconds, 0);
}

// Two workers on a 1 MB/s link: forward 0.5 + backward 1 + error feedback 0.25 + products 1 + the allreduces of
// 480, 960 and 3,200 bytes (m beta each, for two workers) + the update 0.25.
TEST(SimPowerSgd, AnalyticalAndDiscreteEventGiveTheHandWorkedStep) {
  const auto p = matrix_and_bias();
  const double expected = 0.5 + 1 + 0.25 + 1 + (480 + 960 + 3200) / 1e6 + 0.25;
  EXPECT_NEAR(predict_powersgd(p, 2, 2, LinkCost{0, 1e-6, 0}).iteration_seconds, expected, 1e-12);
  EXPECT_NEAR(predict_powersgd(p, 2, 2, testing::uniform_link(1e6)).iteration_seconds, expected, 1e-12);
  DesSettings s;
  s.algorithm = "arsgd";
  s.workers = 2;
  s.overlap = "none";
  s.powersgd_rank = 2;
  s.powersgd_start = 0;
  s.iterations = 10;
  s.warmup = 2;
  const auto r = simulate_discrete_events(p, testing::uniform_link(1e6), s);
  EXPECT_NEAR(r.iteration_seconds, expected, 1e-9);
  EXPECT_NEAR(r.bytes_per_worker, 480 + 960 + 3200, 1e-6);  // a ring allreduce of two sends (P-1)/P x 2 = once m
  // With a latency every allreduce pays its 2 (P - 1) alpha: three of them.
  const double alpha = 1e-3;
  EXPECT_NEAR(simulate_discrete_events(p, testing::uniform_link(1e6, alpha), s).iteration_seconds,
              expected + 3 * 2 * alpha, 1e-9);
  EXPECT_NEAR(predict_powersgd(p, 2, 2, testing::uniform_link(1e6, alpha)).iteration_seconds, expected + 3 * 2 * alpha,
              1e-12);
}

// Before --powersgd-start the step is AR-SGD's without overlap: one allreduce of the whole gradient.
TEST(SimPowerSgd, BeforeTheStartItIsPlainAllreduce) {
  const auto p = matrix_and_bias();
  DesSettings s;
  s.algorithm = "arsgd";
  s.workers = 2;
  s.overlap = "none";
  s.iterations = 10;
  s.warmup = 2;
  const double plain = simulate_discrete_events(p, testing::uniform_link(1e6), s).iteration_seconds;
  s.powersgd_rank = 2;
  s.powersgd_start = 1000;
  EXPECT_NEAR(simulate_discrete_events(p, testing::uniform_link(1e6), s).iteration_seconds, plain, 1e-12);
  EXPECT_NEAR(plain, 0.5 + 1 + 4 * 48120 / 1e6 + 0.25, 1e-9);
}

TEST(SimPowerSgd, AProfileWithoutShapesIsRefused) {
  auto p = matrix_and_bias();
  p.tensors[0].shape.clear();
  EXPECT_NE(testing::error_of_call([&] { powersgd_step(p, 2); }).find("profile the model again"), std::string::npos);
}

}  // namespace
}  // namespace distsgd::sim
