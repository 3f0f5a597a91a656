#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/models/direct_linear.hpp"
#include "distsgd/models/model.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

// Two linear layers, written out here so the test depends on nothing but the Model interface.
class TwoLayers : public distsgd::models::Model {
 public:
  TwoLayers() : a_(torch::nn::Linear(3, 4)), b_(torch::nn::Linear(4, 2)) {}
  at::Tensor forward(const at::Tensor& x) override { return b_->forward(torch::relu(a_->forward(x))); }
  std::vector<at::Tensor> parameters() override { return {a_->weight, a_->bias, b_->weight, b_->bias}; }
  std::vector<std::string> parameter_names() override { return {"a.weight", "a.bias", "b.weight", "b.bias"}; }
  std::vector<at::Tensor> buffers() override { return {}; }
  void set_training(bool) override {}
  std::string name() const override { return "two-layers"; }

 private:
  torch::nn::Linear a_, b_;
};

}  // namespace

TEST(FlatParameters, ParametersAreViewsOfOneBufferInRegistrationOrder) {
  torch::manual_seed(1);
  TwoLayers model;
  std::vector<at::Tensor> before;
  for (auto& p : model.parameters()) before.push_back(p.detach().clone());
  distsgd::optim::FlatParameters flat(model);
  ASSERT_EQ(flat.numel(), 3 * 4 + 4 + 4 * 2 + 2);
  ASSERT_EQ(flat.slots().size(), 4u);
  auto params = model.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& slot = flat.slots()[i];
    EXPECT_TRUE(torch::equal(params[i], before[i])) << "values kept for " << slot.name;
    EXPECT_EQ(params[i].data_ptr<float>(), flat.params().data_ptr<float>() + slot.offset) << slot.name;
  }
  // Writing the flat buffer changes the model.
  flat.params().fill_(0.5f);
  EXPECT_TRUE(torch::all(model.parameters()[2].eq(0.5f)).item<bool>());
}

TEST(FlatParameters, BackwardAccumulatesIntoTheFlatGradientBuffer) {
  torch::manual_seed(2);
  TwoLayers model;
  distsgd::optim::FlatParameters flat(model);
  auto x = torch::randn({5, 3});
  auto loss = model.forward(x).pow(2).sum();
  flat.zero_grads();
  loss.backward();
  // Reference gradients from a copy of the same weights, computed the ordinary way.
  auto w1 = model.parameters()[0].detach().clone().requires_grad_();
  auto b1 = model.parameters()[1].detach().clone().requires_grad_();
  auto w2 = model.parameters()[2].detach().clone().requires_grad_();
  auto b2 = model.parameters()[3].detach().clone().requires_grad_();
  auto ref = torch::nn::functional::linear(torch::relu(torch::nn::functional::linear(x, w1, b1)), w2, b2);
  ref.pow(2).sum().backward();
  auto expected = torch::cat({w1.grad().flatten(), b1.grad(), w2.grad().flatten(), b2.grad()});
  EXPECT_TRUE(torch::allclose(flat.grads(), expected, 1e-5, 1e-6));
  // A second backward accumulates; zero_grads clears.
  model.forward(x).pow(2).sum().backward();
  EXPECT_TRUE(torch::allclose(flat.grads(), 2 * expected, 1e-5, 1e-6));
  flat.zero_grads();
  EXPECT_EQ(flat.grads().abs().sum().item<float>(), 0.0f);
}

namespace {

// A DirectLinear, an ordinary Linear and a DirectLinear the loss never reaches.
class MixedLayers : public distsgd::models::Model {
 public:
  MixedLayers() : a_(3, 4), b_(torch::nn::Linear(4, 2)), unused_(2, 2) {}
  at::Tensor forward(const at::Tensor& x) override { return b_->forward(torch::relu(a_->forward(x))); }
  std::vector<at::Tensor> parameters() override {
    return {a_->weight, a_->bias, b_->weight, b_->bias, unused_->weight, unused_->bias};
  }
  std::vector<std::string> parameter_names() override {
    return {"a.weight", "a.bias", "b.weight", "b.bias", "unused.weight", "unused.bias"};
  }
  std::vector<at::Tensor> buffers() override { return {}; }
  void set_training(bool) override {}
  std::string name() const override { return "mixed-layers"; }
  void set_gradient_destinations(const std::vector<at::Tensor>& d) override {
    const bool set = d.size() == 6;
    a_->set_gradient_destinations(set ? d[0] : at::Tensor(), set ? d[1] : at::Tensor());
    unused_->set_gradient_destinations(set ? d[4] : at::Tensor(), set ? d[5] : at::Tensor());
  }

 private:
  distsgd::models::DirectLinear a_;
  torch::nn::Linear b_;
  distsgd::models::DirectLinear unused_;
};

at::Tensor reference_gradients(MixedLayers& model, const at::Tensor& x) {
  auto p = model.parameters();
  std::vector<at::Tensor> copies;
  for (int i = 0; i < 4; ++i) copies.push_back(p[i].detach().clone().requires_grad_());
  namespace F = torch::nn::functional;
  F::linear(torch::relu(F::linear(x, copies[0], copies[1])), copies[2], copies[3]).pow(2).sum().backward();
  return torch::cat({copies[0].grad().flatten(), copies[1].grad(), copies[2].grad().flatten(), copies[3].grad(),
                     torch::zeros({2 * 2 + 2})});
}

}  // namespace

TEST(FlatParameters, DirectLinearIsLinearDrawForDraw) {
  torch::manual_seed(7);
  torch::nn::Linear linear(5, 3);
  torch::manual_seed(7);
  distsgd::models::DirectLinear direct(5, 3);
  EXPECT_TRUE(torch::equal(linear->weight, direct->weight));
  EXPECT_TRUE(torch::equal(linear->bias, direct->bias));
  EXPECT_EQ(direct->named_parameters().keys(), (std::vector<std::string>{"weight", "bias"}));
  // Without destinations its gradients are fresh tensors, as Linear's, and equal to them.
  auto x = torch::randn({6, 5}, torch::requires_grad());
  linear->forward(x).pow(2).sum().backward();
  const auto linear_x_grad = x.grad().clone();
  x.mutable_grad() = at::Tensor();
  direct->forward(x).pow(2).sum().backward();
  EXPECT_TRUE(torch::allclose(direct->weight.grad(), linear->weight.grad(), 1e-6, 1e-7));
  EXPECT_TRUE(torch::allclose(direct->bias.grad(), linear->bias.grad(), 1e-6, 1e-7));
  EXPECT_TRUE(torch::allclose(x.grad(), linear_x_grad, 1e-6, 1e-7));
}

TEST(FlatParameters, StepBackwardPutsEveryGradientInItsSlotOnce) {
  torch::manual_seed(3);
  MixedLayers model;
  distsgd::optim::FlatParameters flat(model);
  auto params = model.parameters();
  // What reaches the accumulator of each parameter: a DirectLinear's gradient is already its slot.
  std::vector<const void*> incoming(params.size(), nullptr);
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].register_hook([&incoming, i](const at::Tensor& g) {
      incoming[i] = g.data_ptr();
      return g;
    });
  }
  auto x = torch::randn({5, 3});
  flat.grads().fill_(42.0f);  // stale values: every slot must be overwritten, the unused layer's with zeros
  flat.begin_backward();
  model.forward(x).pow(2).sum().backward();
  flat.end_backward();
  const auto expected = reference_gradients(model, x);
  EXPECT_TRUE(torch::allclose(flat.grads(), expected, 1e-5, 1e-6)) << flat.grads() << expected;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& slot = flat.slots()[i];
    EXPECT_EQ(params[i].grad().data_ptr<float>(), flat.grads().data_ptr<float>() + slot.offset) << slot.name;
  }
  EXPECT_EQ(incoming[0], flat.grads().data_ptr<float>() + flat.slots()[0].offset) << "a.weight written in place";
  EXPECT_EQ(incoming[1], flat.grads().data_ptr<float>() + flat.slots()[1].offset) << "a.bias written in place";
  EXPECT_NE(incoming[2], flat.grads().data_ptr<float>() + flat.slots()[2].offset) << "b.weight is autograd's own";

  // A second backward outside begin/end adds to the slots, the direct layer's included.
  model.forward(x).pow(2).sum().backward();
  EXPECT_TRUE(torch::allclose(flat.grads(), 2 * expected, 1e-5, 1e-6));
  // The next step starts from its own gradient again.
  flat.begin_backward();
  model.forward(x).pow(2).sum().backward();
  flat.end_backward();
  EXPECT_TRUE(torch::allclose(flat.grads(), expected, 1e-5, 1e-6));
}

TEST(FlatParameters, MlpStepGradientsEqualOrdinaryLinearLayers) {
  // The registry's mlp (DirectLinear layers) under FlatParameters against the same network of torch::nn::Linear.
  torch::manual_seed(11);
  distsgd::models::ModelOptions options;
  options.name = "mlp";
  options.mlp_width = 32;
  auto model = distsgd::models::make_model(options, {1, 6, 6, 5});
  torch::manual_seed(11);
  torch::nn::Sequential reference;  // one layer after the other: arguments of one call are drawn in any order
  reference->push_back(torch::nn::Linear(36, 32));
  reference->push_back(torch::nn::ReLU());
  reference->push_back(torch::nn::Linear(32, 32));
  reference->push_back(torch::nn::ReLU());
  reference->push_back(torch::nn::Linear(32, 5));
  distsgd::optim::FlatParameters flat(*model);
  {
    std::vector<at::Tensor> reference_values;
    for (auto& p : reference->parameters()) reference_values.push_back(p.detach().flatten());
    ASSERT_TRUE(torch::equal(flat.params(), torch::cat(reference_values))) << "same seed, same weights";
  }
  auto x = torch::randn({8, 1, 6, 6});
  auto labels = torch::randint(0, 5, {8});
  for (int step = 0; step < 2; ++step) {
    flat.begin_backward();
    torch::nn::functional::cross_entropy(model->forward(x), labels).backward();
    flat.end_backward();
    for (auto& p : reference->parameters()) p.mutable_grad() = at::Tensor();
    torch::nn::functional::cross_entropy(reference->forward(x.flatten(1)), labels).backward();
    std::vector<at::Tensor> expected;
    for (auto& p : reference->parameters()) expected.push_back(p.grad().flatten());
    EXPECT_TRUE(torch::allclose(flat.grads(), torch::cat(expected), 1e-5, 1e-7))
        << "step " << step << ": largest difference "
        << (flat.grads() - torch::cat(expected)).abs().max().item<float>();
  }
}
