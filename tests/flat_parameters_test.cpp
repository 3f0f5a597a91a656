#include "distsgd/optim/flat_parameters.hpp"
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
