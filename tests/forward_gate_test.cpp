// Forward gates (Model::set_forward_gate): every registry model announces each block's parameters, in order,
// before using them, so that AR-SGD multistep can overlap the allgather of later layers with earlier layers.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <utility>
#include <vector>

#include "distsgd/models/model.hpp"

namespace dm = distsgd::models;

namespace {

using Range = std::pair<int64_t, int64_t>;

dm::InputSpec gate_input_for(const std::string& name) {
  if (name == "gpt-mini") return {1, 1, 16, 256, true};  // 16 bytes
  if (name == "mlp" || name == "lenet5" || name.rfind("resnet1", 0) == 0 || name == "resnet50") return {1, 28, 28, 10};
  return {3, 32, 32, 10};
}

struct GatedModel {
  std::unique_ptr<dm::Model> model;
  at::Tensor input;
};

GatedModel build(const std::string& name) {
  const auto spec = gate_input_for(name);
  dm::ModelOptions options;
  options.name = name;
  options.mlp_width = 64;  // the default 2048 makes mlp the slowest test here for no extra coverage
  torch::manual_seed(0);
  GatedModel built{dm::make_model(options, spec), {}};
  built.input = spec.sequence ? torch::randint(0, 256, {2, spec.width}, torch::kLong)
                              : torch::randn({2, spec.channels, spec.height, spec.width});
  return built;
}

std::vector<Range> record_gate_calls(dm::Model& model, const at::Tensor& input) {
  std::vector<Range> calls;
  model.set_forward_gate([&calls](int64_t first, int64_t end) { calls.emplace_back(first, end); });
  model.forward(input);
  model.set_forward_gate(nullptr);
  return calls;
}

}  // namespace

TEST(ForwardGate, EveryRegistryModelGatesEachParameterOnceInOrder) {
  for (const auto& name : dm::model_names()) {
    SCOPED_TRACE(name);
    auto [model, input] = build(name);
    ASSERT_TRUE(model->supports_forward_gate());
    const auto parameters = static_cast<int64_t>(model->parameters().size());
    const auto calls = record_gate_calls(*model, input);
    ASSERT_FALSE(calls.empty());
    // Back to back from 0 to the end: each parameter in exactly one range, ranges in increasing order.
    int64_t next = 0;
    for (const auto& [first, end] : calls) {
      EXPECT_EQ(first, next);
      EXPECT_LT(first, end);
      next = end;
    }
    EXPECT_EQ(next, parameters);
    // The per-block ranges are cached after the first forward; the second must say the same.
    EXPECT_EQ(record_gate_calls(*model, input), calls);
  }
}

TEST(ForwardGate, GatesFollowBlocks) {
  // lenet5: one gate per layer (weight and bias).
  auto lenet = build("lenet5");
  EXPECT_EQ(record_gate_calls(*lenet.model, lenet.input),
            (std::vector<Range>{{0, 2}, {2, 4}, {4, 6}, {6, 8}, {8, 10}}));
  // resnet20: conv1, bn1, nine residual blocks of conv-bn-conv-bn (6 tensors each), fc.
  auto resnet = build("resnet20");
  const auto calls = record_gate_calls(*resnet.model, resnet.input);
  ASSERT_EQ(calls.size(), 1u + 1u + 9u + 1u);
  EXPECT_EQ(calls[0], Range(0, 1));
  EXPECT_EQ(calls[1], Range(1, 3));
  for (size_t block = 0; block < 9; ++block) {
    const auto first = static_cast<int64_t>(3 + 6 * block);
    EXPECT_EQ(calls[2 + block], Range(first, first + 6));
  }
  EXPECT_EQ(calls.back(), Range(57, 59));
}

// The gate is where multistep writes the gathered parameters. Here every parameter starts as NaN and the gate
// restores its range: the forward must see only restored values (no parameter used before its gate), and
// backward must not object to parameters written in place mid-forward.
TEST(ForwardGate, ParametersWrittenByTheGateGiveTheUngatedOutputAndGradients) {
  for (const auto& name : dm::model_names()) {
    SCOPED_TRACE(name);
    auto [model, input] = build(name);
    auto parameters = model->parameters();
    // Training mode, where multistep uses the gate; BatchNorm normalizes with batch statistics in both passes.
    model->set_training(true);

    auto expected = model->forward(input);
    expected.sum().backward();
    std::vector<at::Tensor> saved, expected_grads;
    for (auto& p : parameters) {
      saved.push_back(p.detach().clone());
      expected_grads.push_back(p.grad().clone());
      p.mutable_grad() = at::Tensor();
    }

    {
      torch::NoGradGuard no_grad;
      for (auto& p : parameters) p.fill_(std::numeric_limits<float>::quiet_NaN());
    }
    model->set_forward_gate([&](int64_t first, int64_t end) {
      torch::NoGradGuard no_grad;
      for (int64_t i = first; i < end; ++i) parameters[i].copy_(saved[i]);
    });
    auto output = model->forward(input);
    model->set_forward_gate(nullptr);
    EXPECT_TRUE(torch::equal(output, expected));
    output.sum().backward();
    for (size_t i = 0; i < parameters.size(); ++i) {
      ASSERT_TRUE(parameters[i].grad().defined()) << model->parameter_names()[i];
      EXPECT_TRUE(torch::allclose(parameters[i].grad(), expected_grads[i])) << model->parameter_names()[i];
    }
  }
}

TEST(ForwardGate, RemovedGateIsNotCalled) {
  auto [model, input] = build("resnet20");
  int64_t calls = 0;
  model->set_forward_gate([&calls](int64_t, int64_t) { ++calls; });
  model->forward(input);
  EXPECT_GT(calls, 0);
  model->set_forward_gate(nullptr);
  calls = 0;
  model->forward(input);
  EXPECT_EQ(calls, 0);
}
