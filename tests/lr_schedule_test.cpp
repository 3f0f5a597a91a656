#include "distsgd/optim/lr_schedule.hpp"

#include <gtest/gtest.h>

using distsgd::optim::LrSchedule;

TEST(LrSchedule, ConstantWithoutWarmupOrDecay) {
  LrSchedule s;
  s.base_lr = 0.1;
  EXPECT_DOUBLE_EQ(s.at(0, 100), 0.1);
  EXPECT_DOUBLE_EQ(s.at(12345, 100), 0.1);
}

TEST(LrSchedule, LinearScalingMultipliesTheBase) {
  LrSchedule s;
  s.base_lr = 0.1;
  s.scale = 1024.0 / 256.0;
  EXPECT_DOUBLE_EQ(s.at(5, 10), 0.4);
}

// Goyal et al. 2017, section 2.2: from the small-batch rate eta (here 0.2 / 4) up by a constant amount per step to
// the target k * eta (0.2), reached when warm-up ends.
TEST(LrSchedule, WarmupRampsFromTheSmallBatchRateToTheTarget) {
  LrSchedule s;
  s.base_lr = 0.2;
  s.warmup_epochs = 2;  // 20 steps of 10 per epoch
  s.warmup_start_fraction = 0.25;
  EXPECT_DOUBLE_EQ(s.at(0, 10), 0.05);
  EXPECT_DOUBLE_EQ(s.at(10, 10), 0.05 + 0.15 * 10 / 20);
  EXPECT_DOUBLE_EQ(s.at(19, 10), 0.05 + 0.15 * 19 / 20);
  EXPECT_DOUBLE_EQ(s.at(20, 10), 0.2);
  EXPECT_DOUBLE_EQ(s.at(500, 10), 0.2);
  // The same increment every step.
  EXPECT_NEAR(s.at(7, 10) - s.at(6, 10), s.at(1, 10) - s.at(0, 10), 1e-15);
}

// Linear scaling: warm-up starts at --lr itself (eta) and ends at lr * global batch / 256 (k * eta).
TEST(LrSchedule, WarmupUnderLinearScalingStartsAtTheBaseLearningRate) {
  LrSchedule s;
  s.base_lr = 0.1;
  s.scale = 1024.0 / 256.0;
  s.warmup_epochs = 1;
  s.warmup_start_fraction = distsgd::optim::warmup_start_fraction(true, 1024, 8);
  EXPECT_DOUBLE_EQ(s.warmup_start_fraction, 0.25);
  EXPECT_DOUBLE_EQ(s.at(0, 10), 0.1);
  EXPECT_DOUBLE_EQ(s.at(10, 10), 0.4);
}

TEST(LrSchedule, WarmupStartFractionIsOneOverK) {
  using distsgd::optim::warmup_start_fraction;
  EXPECT_DOUBLE_EQ(warmup_start_fraction(false, 256, 8), 1.0 / 8);  // k = workers without linear scaling
  EXPECT_DOUBLE_EQ(warmup_start_fraction(true, 512, 8), 0.5);       // k = global batch / 256
  EXPECT_DOUBLE_EQ(warmup_start_fraction(true, 128, 4), 1.0);       // k <= 1: nothing to ramp up from
  EXPECT_DOUBLE_EQ(warmup_start_fraction(false, 64, 1), 1.0);
}

TEST(LrSchedule, StepDecayAtTheStartOfEachGivenEpoch) {
  LrSchedule s;
  s.base_lr = 1.0;
  s.decay_epochs = {3, 5};
  EXPECT_DOUBLE_EQ(s.at(29, 10), 1.0);
  EXPECT_DOUBLE_EQ(s.at(30, 10), 0.1);
  EXPECT_DOUBLE_EQ(s.at(49, 10), 0.1);
  EXPECT_NEAR(s.at(50, 10), 0.01, 1e-15);
}

TEST(LrSchedule, FractionalWarmupAndDecayCombine) {
  LrSchedule s;
  s.base_lr = 0.5;
  s.scale = 2;
  s.warmup_epochs = 0.5;  // 5 steps
  s.warmup_start_fraction = 0.5;
  s.decay_epochs = {1};
  EXPECT_DOUBLE_EQ(s.at(1, 10), 1.0 * (0.5 + 0.5 * 1 / 5));
  EXPECT_DOUBLE_EQ(s.at(5, 10), 1.0);
  EXPECT_DOUBLE_EQ(s.at(10, 10), 0.1);
}
