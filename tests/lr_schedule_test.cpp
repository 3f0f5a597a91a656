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

TEST(LrSchedule, WarmupRampsLinearlyToTheTarget) {
  LrSchedule s;
  s.base_lr = 0.2;
  s.warmup_epochs = 2;  // 20 steps of 10 per epoch
  EXPECT_DOUBLE_EQ(s.at(0, 10), 0.2 * 1 / 20);
  EXPECT_DOUBLE_EQ(s.at(9, 10), 0.2 * 10 / 20);
  EXPECT_DOUBLE_EQ(s.at(19, 10), 0.2);
  EXPECT_DOUBLE_EQ(s.at(20, 10), 0.2);
  EXPECT_DOUBLE_EQ(s.at(500, 10), 0.2);
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
  s.decay_epochs = {1};
  EXPECT_DOUBLE_EQ(s.at(1, 10), 1.0 * 2 / 5);
  EXPECT_DOUBLE_EQ(s.at(4, 10), 1.0);
  EXPECT_DOUBLE_EQ(s.at(10, 10), 0.1);
}
