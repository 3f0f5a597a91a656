// LeNet-5 (LeCun et al. 1998) with ReLU and max-pooling, the usual modern rendition for MNIST-sized images.
#include <torch/torch.h>

#include "distsgd/core/error.hpp"
#include "distsgd/models/builders.hpp"
#include "distsgd/models/module_model.hpp"

namespace distsgd::models {
namespace {

// Side length after conv1 (5x5, pad 2: same size), pool, conv2 (5x5, no pad), pool.
int64_t lenet_feature_side(int64_t side) { return (side / 2 - 4) / 2; }

class LeNet5Impl : public torch::nn::Module {
 public:
  LeNet5Impl(int64_t channels, int64_t height, int64_t width, int64_t classes)
      : conv1_(torch::nn::Conv2dOptions(channels, 6, 5).padding(2)),
        conv2_(torch::nn::Conv2dOptions(6, 16, 5)),
        fc1_(16 * lenet_feature_side(height) * lenet_feature_side(width), 120),
        fc2_(120, 84),
        fc3_(84, classes) {
    register_module("conv1", conv1_);
    register_module("conv2", conv2_);
    register_module("fc1", fc1_);
    register_module("fc2", fc2_);
    register_module("fc3", fc3_);
  }

  at::Tensor forward(const at::Tensor& input) {
    forward_gate(*conv1_);
    auto x = torch::max_pool2d(torch::relu(conv1_->forward(input)), 2);
    forward_gate(*conv2_);
    x = torch::max_pool2d(torch::relu(conv2_->forward(x)), 2);
    forward_gate(*fc1_);
    x = torch::relu(fc1_->forward(x.flatten(1)));
    forward_gate(*fc2_);
    x = torch::relu(fc2_->forward(x));
    forward_gate(*fc3_);
    return fc3_->forward(x);
  }

  BlockGate forward_gate;

 private:
  torch::nn::Conv2d conv1_, conv2_;
  torch::nn::Linear fc1_, fc2_, fc3_;
};
TORCH_MODULE(LeNet5);

}  // namespace

std::unique_ptr<Model> make_lenet5(const InputSpec& input) {
  require(input.height >= 12 && input.width >= 12, "lenet5 needs images of at least 12x12; got " +
                                                       std::to_string(input.height) + "x" +
                                                       std::to_string(input.width) + " (try mlp or resnet18)");
  return std::make_unique<ModuleModel<LeNet5>>(LeNet5(input.channels, input.height, input.width, input.classes),
                                               "lenet5");
}

}  // namespace distsgd::models
