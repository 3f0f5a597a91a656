// VGG-11 (configuration A) and VGG-16 (configuration D) of Simonyan & Zisserman 2015, optionally with BatchNorm.
//
// Two heads, chosen by input size:
// - images of at least 64x64 get torchvision's layout exactly (adaptive 7x7 pool, 25088-4096-4096-classes classifier
//   with dropout), so parameter counts and names match torchvision's vgg11/vgg16(_bn);
// - smaller images (CIFAR, MNIST) get the head of the common CIFAR implementations: a max-pool is skipped once the
//   feature map is already 1 pixel wide, and the flattened 512 x (remaining pixels) features go to one Linear layer.
//   The ImageNet head would spend ~120M parameters on a 1x1 map upsampled to 7x7.
#include <torch/torch.h>

#include <algorithm>

#include "distsgd/core/error.hpp"
#include "distsgd/models/builders.hpp"
#include "distsgd/models/module_model.hpp"

namespace distsgd::models {
namespace {

constexpr int64_t kMaxPool = 0;  // marks a 2x2 max-pool in a configuration
constexpr int64_t kImageNetHeadMinSide = 64;

const std::vector<int64_t>& configuration(int depth) {
  static const std::vector<int64_t> a = {64,  kMaxPool, 128,      kMaxPool, 256, 256,     kMaxPool,
                                         512, 512,      kMaxPool, 512,      512, kMaxPool};
  static const std::vector<int64_t> d = {64,       64,  kMaxPool, 128, 128,      kMaxPool, 256, 256, 256,
                                         kMaxPool, 512, 512,      512, kMaxPool, 512,      512, 512, kMaxPool};
  if (depth == 11) return a;
  if (depth == 16) return d;
  throw Error("VGG depth must be 11 or 16; got " + std::to_string(depth));
}

class VggImpl : public torch::nn::Module {
 public:
  VggImpl(const std::vector<int64_t>& config, bool batch_norm, const InputSpec& input)
      : imagenet_head_(input.height >= kImageNetHeadMinSide && input.width >= kImageNetHeadMinSide) {
    int64_t channels = input.channels, height = input.height, width = input.width;
    for (int64_t entry : config) {
      if (entry == kMaxPool) {
        if (!imagenet_head_ && std::min(height, width) < 2) continue;  // nothing left to pool (small inputs only)
        features_->push_back(torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2).stride(2)));
        height /= 2;
        width /= 2;
        continue;
      }
      features_->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, entry, 3).padding(1)));
      if (batch_norm) features_->push_back(torch::nn::BatchNorm2d(entry));
      features_->push_back(torch::nn::ReLU(torch::nn::ReLUOptions(/*inplace=*/true)));
      channels = entry;
    }
    register_module("features", features_);
    if (imagenet_head_) {
      classifier_ = torch::nn::Sequential(torch::nn::Linear(channels * 7 * 7, 4096), torch::nn::ReLU(true),
                                          torch::nn::Dropout(0.5), torch::nn::Linear(4096, 4096), torch::nn::ReLU(true),
                                          torch::nn::Dropout(0.5), torch::nn::Linear(4096, input.classes));
    } else {
      classifier_ = torch::nn::Sequential(torch::nn::Linear(channels * height * width, input.classes));
    }
    register_module("classifier", classifier_);
    // torchvision's initialization.
    for (auto& module : modules(/*include_self=*/false)) {
      if (auto* conv = module->as<torch::nn::Conv2d>()) {
        torch::nn::init::kaiming_normal_(conv->weight, 0, torch::kFanOut, torch::kReLU);
        torch::nn::init::zeros_(conv->bias);
      } else if (auto* bn = module->as<torch::nn::BatchNorm2d>()) {
        torch::nn::init::ones_(bn->weight);
        torch::nn::init::zeros_(bn->bias);
      } else if (auto* linear = module->as<torch::nn::Linear>()) {
        torch::nn::init::normal_(linear->weight, 0, 0.01);
        torch::nn::init::zeros_(linear->bias);
      }
    }
  }

  at::Tensor forward(const at::Tensor& input) {
    auto x = forward_gate.forward_each(features_, input);
    if (imagenet_head_) x = torch::adaptive_avg_pool2d(x, {7, 7});
    return forward_gate.forward_each(classifier_, x.flatten(1));
  }

  BlockGate forward_gate;

 private:
  bool imagenet_head_;
  torch::nn::Sequential features_;
  torch::nn::Sequential classifier_{nullptr};
};
TORCH_MODULE(Vgg);

}  // namespace

std::unique_ptr<Model> make_vgg(int depth, bool batch_norm, const InputSpec& input) {
  return std::make_unique<ModuleModel<Vgg>>(Vgg(configuration(depth), batch_norm, input),
                                            "vgg" + std::to_string(depth));
}

}  // namespace distsgd::models
