// ResNet-20/32/56 for 32x32 images (He et al. 2016, section 4.2): three stages of 16/32/64 channels and the
// parameter-free "option A" shortcut, as in the CIFAR experiments of the paper.
#include <torch/torch.h>

#include "distsgd/core/error.hpp"
#include "distsgd/models/builders.hpp"
#include "distsgd/models/module_model.hpp"

namespace distsgd::models {
namespace {

using torch::indexing::None;
using torch::indexing::Slice;

torch::nn::Conv2d conv3x3(int64_t in, int64_t out, int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false));
}

class CifarBasicBlockImpl : public torch::nn::Module {
 public:
  CifarBasicBlockImpl(int64_t in_planes, int64_t planes, int64_t stride)
      : conv1_(conv3x3(in_planes, planes, stride)),
        bn1_(planes),
        conv2_(conv3x3(planes, planes, 1)),
        bn2_(planes),
        subsample_(stride != 1),
        pad_front_((planes - in_planes) / 2),
        pad_back_(planes - in_planes - pad_front_) {
    register_module("conv1", conv1_);
    register_module("bn1", bn1_);
    register_module("conv2", conv2_);
    register_module("bn2", bn2_);
  }

  at::Tensor forward(const at::Tensor& input) {
    auto out = torch::relu(bn1_->forward(conv1_->forward(input)));
    out = bn2_->forward(conv2_->forward(out));
    return torch::relu(out + shortcut(input));
  }

 private:
  // Option A: identity, or every other pixel with the new channels zero-filled; no parameters.
  at::Tensor shortcut(const at::Tensor& input) const {
    auto x = subsample_ ? input.index({Slice(), Slice(), Slice(None, None, 2), Slice(None, None, 2)}) : input;
    if (pad_front_ == 0 && pad_back_ == 0) return x;
    return torch::constant_pad_nd(x, {0, 0, 0, 0, pad_front_, pad_back_}, 0);
  }

  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d bn1_;
  torch::nn::Conv2d conv2_;
  torch::nn::BatchNorm2d bn2_;
  bool subsample_;
  int64_t pad_front_, pad_back_;
};
TORCH_MODULE(CifarBasicBlock);

class CifarResNetImpl : public torch::nn::Module {
 public:
  CifarResNetImpl(int64_t blocks_per_stage, int64_t channels, int64_t classes)
      : conv1_(conv3x3(channels, 16, 1)), bn1_(16), fc_(64, classes) {
    register_module("conv1", conv1_);
    register_module("bn1", bn1_);
    int64_t in_planes = 16;
    const int64_t stage_planes[] = {16, 32, 64};
    for (int stage = 0; stage < 3; ++stage) {
      torch::nn::Sequential layer;
      for (int64_t block = 0; block < blocks_per_stage; ++block) {
        const int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
        layer->push_back(CifarBasicBlock(in_planes, stage_planes[stage], stride));
        in_planes = stage_planes[stage];
      }
      stages_.push_back(register_module("layer" + std::to_string(stage + 1), layer));
    }
    register_module("fc", fc_);
    // The reference CIFAR implementations use Kaiming-normal (fan-in) weights for convolutions and the classifier.
    for (auto& module : modules(/*include_self=*/false)) {
      if (auto* conv = module->as<torch::nn::Conv2d>()) torch::nn::init::kaiming_normal_(conv->weight);
      if (auto* linear = module->as<torch::nn::Linear>()) torch::nn::init::kaiming_normal_(linear->weight);
    }
  }

  at::Tensor forward(const at::Tensor& input) {
    forward_gate(*conv1_);
    forward_gate(*bn1_);
    auto x = torch::relu(bn1_->forward(conv1_->forward(input)));
    for (auto& stage : stages_) x = forward_gate.forward_each(stage, x);  // one gate per residual block
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    forward_gate(*fc_);
    return fc_->forward(x);
  }

  BlockGate forward_gate;

 private:
  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d bn1_;
  std::vector<torch::nn::Sequential> stages_;
  torch::nn::Linear fc_;
};
TORCH_MODULE(CifarResNet);

}  // namespace

std::unique_ptr<Model> make_resnet_cifar(int depth, const InputSpec& input) {
  require(depth >= 8 && (depth - 2) % 6 == 0, "CIFAR ResNet depth must be 6n+2; got " + std::to_string(depth));
  const int64_t blocks_per_stage = (depth - 2) / 6;
  return std::make_unique<ModuleModel<CifarResNet>>(CifarResNet(blocks_per_stage, input.channels, input.classes),
                                                    "resnet" + std::to_string(depth));
}

}  // namespace distsgd::models
