#include "distsgd/optim/sgd.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

using distsgd::optim::MomentumSgd;

// Two steps computed by hand with torch.optim.SGD's rule: d = g + wd*p; v = mu*v + d; p -= lr*v.
TEST(MomentumSgd, MatchesPyTorchRuleByHand) {
  MomentumSgd sgd(2, 0.9, 0.1);
  auto p = torch::tensor({1.0f, -2.0f});
  sgd.step(p, torch::tensor({0.5f, 0.5f}), 0.1);
  // d = [0.6, 0.3]; v = d; p = [0.94, -2.03]
  EXPECT_NEAR(p[0].item<float>(), 0.94f, 1e-6);
  EXPECT_NEAR(p[1].item<float>(), -2.03f, 1e-6);
  sgd.step(p, torch::tensor({0.0f, 1.0f}), 0.1);
  // d = [0.094, 0.797]; v = [0.54+0.094, 0.27+0.797] = [0.634, 1.067]; p = [0.8766, -2.1367]
  EXPECT_NEAR(p[0].item<float>(), 0.8766f, 1e-6);
  EXPECT_NEAR(p[1].item<float>(), -2.1367f, 1e-6);
}

TEST(MomentumSgd, SlicesUpdateLikeTheWhole) {
  torch::manual_seed(3);
  auto p_whole = torch::randn({10});
  auto p_parts = p_whole.clone();
  MomentumSgd whole(10, 0.9, 1e-4), parts(10, 0.9, 1e-4);
  for (int it = 0; it < 3; ++it) {
    auto g = torch::randn({10});
    whole.step(p_whole, g.clone(), 0.05);
    parts.step(p_parts.narrow(0, 0, 4), g.narrow(0, 0, 4).clone(), 0.05, 0);
    parts.step(p_parts.narrow(0, 4, 6), g.narrow(0, 4, 6).clone(), 0.05, 4);
  }
  EXPECT_TRUE(torch::equal(p_whole, p_parts));
}

TEST(MomentumSgd, MatchesTorchOptimSgd) {
  torch::manual_seed(5);
  auto reference = torch::randn({7}).requires_grad_();
  auto flat = reference.detach().clone();
  torch::optim::SGD optim({reference}, torch::optim::SGDOptions(0.03).momentum(0.9).weight_decay(1e-4));
  MomentumSgd sgd(7, 0.9, 1e-4);
  for (int it = 0; it < 5; ++it) {
    auto g = torch::randn({7});
    reference.mutable_grad() = g.clone();
    optim.step();
    sgd.step(flat, g.clone(), 0.03);
  }
  EXPECT_TRUE(torch::allclose(reference.detach(), flat, 1e-6, 1e-7));
}
