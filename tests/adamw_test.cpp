// AdamW (optim/adamw.hpp, the fused kernel of optim/kernels.hpp) against torch::optim::AdamW over several steps, and
// the worker optimizer (optim/worker_optimizer.hpp) the algorithms step through.
#include "distsgd/optim/adamw.hpp"
#include "distsgd/core/config.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/optim/kernels.hpp"
#include "distsgd/optim/sgd.hpp"
#include "distsgd/optim/worker_optimizer.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

namespace {

// Bitwise equality (torch::equal would call -0 and +0 equal).
::testing::AssertionResult same_bits(const at::Tensor& a, const at::Tensor& b) {
  if (a.numel() != b.numel()) return ::testing::AssertionFailure() << "sizes differ";
  const auto differ = a.contiguous().view(at::kInt).ne(b.contiguous().view(at::kInt));
  const int64_t count = differ.sum().item<int64_t>();
  if (count == 0) return ::testing::AssertionSuccess();
  const int64_t first = differ.nonzero()[0][0].item<int64_t>();
  return ::testing::AssertionFailure() << count << " of " << a.numel() << " elements differ, first at " << first << ": "
                                       << a[first].item<float>() << " vs " << b[first].item<float>();
}

struct Case {
  int64_t n;
  double weight_decay;
  double divisor;
};

}  // namespace

// torch::optim::AdamW of libtorch 1.13 runs, per parameter: p.mul_(1 - lr*wd); m.mul_(b1).add_(g, 1 - b1);
// v.mul_(b2).addcmul_(g, g, 1 - b2); d = (v.sqrt() / sqrt(1 - b2^t)).add_(eps); p.addcdiv_(m, d, -lr / (1 - b1^t)).
// The fused kernel computes the same in the same order, so parameters and both moments are equal bit for bit after
// every step: on sizes that are not multiples of a vector width, above the size the kernels split across threads,
// with weight decay, and with the gradient divided first (AR-SGD's sum of n gradients).
TEST(AdamW, EqualsTorchOptimAdamWBitForBitOverSeveralSteps) {
  torch::manual_seed(7);
  for (const Case& c : {Case{7, 0.0, 1.0}, Case{1023, 0.01, 1.0}, Case{100003, 0.1, 3.0}, Case{4096, 0.0, 2.0}}) {
    SCOPED_TRACE(::testing::Message() << "n " << c.n << " wd " << c.weight_decay << " divisor " << c.divisor);
    const double lr = 3e-3;
    auto reference = torch::randn({c.n});
    auto ours = reference.clone();
    reference.set_requires_grad(true);
    torch::optim::AdamW torch_adamw(
        std::vector<at::Tensor>{reference},
        torch::optim::AdamWOptions(lr).betas({0.9, 0.999}).eps(1e-8).weight_decay(c.weight_decay));
    distsgd::optim::AdamW adamw(c.n, {0.9, 0.999, 1e-8, c.weight_decay});
    for (int step = 1; step <= 5; ++step) {
      // Gradients of several scales, zeros and a sign flip between steps: the moments' corners.
      auto grads = torch::randn({c.n}) * (step % 2 ? 1e-3 : 2.0);
      grads.narrow(0, 0, std::min<int64_t>(c.n, 3)).zero_();
      // What AR-SGD's step sees: the mean, the sum divided by the workers.
      reference.mutable_grad() = c.divisor == 1 ? grads.clone() : grads / c.divisor;
      torch_adamw.step();
      adamw.step(ours, grads, lr, 0, c.divisor);
      const auto& state = static_cast<torch::optim::AdamWParamState&>(
          *torch_adamw.state().at(c10::guts::to_string(reference.unsafeGetTensorImpl())));
      EXPECT_TRUE(same_bits(ours, reference.detach())) << "parameters after step " << step;
      EXPECT_TRUE(same_bits(adamw.exp_avg(), state.exp_avg())) << "exp_avg after step " << step;
      EXPECT_TRUE(same_bits(adamw.exp_avg_sq(), state.exp_avg_sq())) << "exp_avg_sq after step " << step;
      EXPECT_EQ(adamw.steps_of(0, c.n), state.step());
    }
  }
}

// Slices of the flat buffer are parameters of their own, as torch::optim::AdamW's parameter tensors are: each keeps
// its own step count (a slice stepped less often has smaller bias corrections), and a range that straddles two
// slices is refused.
TEST(AdamW, SlicesKeepTheirOwnStepCountsAsTorchParametersDo) {
  torch::manual_seed(8);
  const int64_t n = 1000, cut = 300;
  auto flat = torch::randn({n});
  auto first = flat.narrow(0, 0, cut).clone().set_requires_grad(true);
  auto second = flat.narrow(0, cut, n - cut).clone().set_requires_grad(true);
  torch::optim::AdamW torch_adamw(std::vector<at::Tensor>{first, second},
                                  torch::optim::AdamWOptions(1e-2).weight_decay(0.05));
  distsgd::optim::AdamW adamw(n, {0.9, 0.999, 1e-8, 0.05});
  for (int step = 1; step <= 4; ++step) {
    auto grads = torch::randn({n});
    first.mutable_grad() = grads.narrow(0, 0, cut).clone();
    // The second slice is stepped every other time only.
    second.mutable_grad() = step % 2 ? grads.narrow(0, cut, n - cut).clone() : at::Tensor();
    torch_adamw.step();
    adamw.step(flat.narrow(0, 0, cut), grads.narrow(0, 0, cut), 1e-2, 0);
    if (step % 2) adamw.step(flat.narrow(0, cut, n - cut), grads.narrow(0, cut, n - cut), 1e-2, cut);
  }
  EXPECT_TRUE(same_bits(flat.narrow(0, 0, cut), first.detach()));
  EXPECT_TRUE(same_bits(flat.narrow(0, cut, n - cut), second.detach()));
  EXPECT_EQ(adamw.steps_of(0, cut), 4);
  EXPECT_EQ(adamw.steps_of(cut, n - cut), 2);
  const auto error =
      distsgd::testing::error_of_call([&] { adamw.step(flat.narrow(0, 200, 200), torch::zeros({200}), 1e-2, 200); });
  EXPECT_NE(error.find("AdamW: the slice [200, +200) overlaps a slice stepped before"), std::string::npos) << error;
}

// --optimizer sgd is the momentum SGD every algorithm used before (bit for bit); adamw is AdamW with --adam-*.
// Their state round-trips through state() and load_state(), so a checkpoint continues exactly.
TEST(WorkerOptimizer, SgdIsMomentumSgdAndAdamWStateRoundTrips) {
  torch::manual_seed(9);
  const int64_t n = 513;
  distsgd::TrainConfig config;
  config.momentum = 0.9;
  config.weight_decay = 1e-3;
  auto sgd = distsgd::optim::make_worker_optimizer(config, n);
  EXPECT_EQ(sgd->name(), "sgd");
  distsgd::optim::MomentumSgd reference(n, 0.9, 1e-3);
  auto p = torch::randn({n}), q = p.clone();
  for (int step = 0; step < 3; ++step) {
    auto g = torch::randn({n});
    sgd->step(p, g, 0.1, 0, 2.0);
    reference.step(q, g, 0.1, 0, {2.0});
  }
  EXPECT_TRUE(same_bits(p, q));
  EXPECT_TRUE(same_bits(sgd->state().at("momentum"), reference.momentum_buffer()));

  config.optimizer = distsgd::Optimizer::kAdamW;
  config.adam_beta1 = 0.8;
  config.adam_beta2 = 0.99;
  config.adam_eps = 1e-6;
  auto adamw = distsgd::optim::make_worker_optimizer(config, n);
  EXPECT_EQ(adamw->name(), "adamw");
  distsgd::optim::AdamW direct(n, {0.8, 0.99, 1e-6, 1e-3});
  auto a = torch::randn({n}), b = a.clone();
  std::vector<at::Tensor> grads;
  for (int step = 0; step < 6; ++step) grads.push_back(torch::randn({n}));
  for (int step = 0; step < 3; ++step) {
    adamw->step(a, grads[step], 0.01);
    direct.step(b, grads[step], 0.01);
  }
  // A checkpoint after 3 steps, loaded into a fresh optimizer that takes the last 3.
  std::map<std::string, at::Tensor> saved;
  for (const auto& [name, tensor] : adamw->state()) saved[name] = tensor.clone();
  EXPECT_EQ(saved.size(), 3u);
  auto resumed = distsgd::optim::make_worker_optimizer(config, n);
  resumed->load_state(saved);
  for (int step = 3; step < 6; ++step) {
    resumed->step(a, grads[step], 0.01);
    direct.step(b, grads[step], 0.01);
  }
  EXPECT_TRUE(same_bits(a, b));
  saved.erase("adamw_steps");
  const auto error = distsgd::testing::error_of_call([&] { resumed->load_state(saved); });
  EXPECT_NE(error.find("the checkpoint holds no 'adamw_steps'"), std::string::npos) << error;
}
