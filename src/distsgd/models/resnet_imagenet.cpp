// The ImageNet ResNets (18, 50, 101, 152) exactly as torchvision builds them (ResNet v1.5: the stride of a bottleneck
// sits on its 3x3 convolution), with the adaptive average pool that lets them run on small images too.
#include <torch/torch.h>

#include <map>

#include "distsgd/core/error.hpp"
#include "distsgd/models/builders.hpp"
#include "distsgd/models/module_model.hpp"

namespace distsgd::models {
namespace {

torch::nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

// conv1x1 + BN on the shortcut when the block changes resolution or width; none otherwise.
torch::nn::Sequential make_downsample(int64_t in, int64_t out, int64_t stride) {
  if (stride == 1 && in == out) return torch::nn::Sequential(nullptr);
  return torch::nn::Sequential(conv(in, out, 1, stride), torch::nn::BatchNorm2d(out));
}

class BasicBlockImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kExpansion = 1;

  BasicBlockImpl(int64_t in_planes, int64_t planes, int64_t stride)
      : conv1_(conv(in_planes, planes, 3, stride)),
        bn1_(planes),
        conv2_(conv(planes, planes, 3, 1)),
        bn2_(planes),
        downsample_(make_downsample(in_planes, planes * kExpansion, stride)) {
    register_module("conv1", conv1_);
    register_module("bn1", bn1_);
    register_module("conv2", conv2_);
    register_module("bn2", bn2_);
    if (downsample_) register_module("downsample", downsample_);
  }

  at::Tensor forward(const at::Tensor& input) {
    auto out = torch::relu(bn1_->forward(conv1_->forward(input)));
    out = bn2_->forward(conv2_->forward(out));
    return torch::relu(out + (downsample_ ? downsample_->forward(input) : input));
  }

 private:
  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d bn1_;
  torch::nn::Conv2d conv2_;
  torch::nn::BatchNorm2d bn2_;
  torch::nn::Sequential downsample_;
};
TORCH_MODULE(BasicBlock);

class BottleneckImpl : public torch::nn::Module {
 public:
  static constexpr int64_t kExpansion = 4;

  BottleneckImpl(int64_t in_planes, int64_t planes, int64_t stride)
      : conv1_(conv(in_planes, planes, 1, 1)),
        bn1_(planes),
        conv2_(conv(planes, planes, 3, stride)),
        bn2_(planes),
        conv3_(conv(planes, planes * kExpansion, 1, 1)),
        bn3_(planes * kExpansion),
        downsample_(make_downsample(in_planes, planes * kExpansion, stride)) {
    register_module("conv1", conv1_);
    register_module("bn1", bn1_);
    register_module("conv2", conv2_);
    register_module("bn2", bn2_);
    register_module("conv3", conv3_);
    register_module("bn3", bn3_);
    if (downsample_) register_module("downsample", downsample_);
  }

  at::Tensor forward(const at::Tensor& input) {
    auto out = torch::relu(bn1_->forward(conv1_->forward(input)));
    out = torch::relu(bn2_->forward(conv2_->forward(out)));
    out = bn3_->forward(conv3_->forward(out));
    return torch::relu(out + (downsample_ ? downsample_->forward(input) : input));
  }

 private:
  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d bn1_;
  torch::nn::Conv2d conv2_;
  torch::nn::BatchNorm2d bn2_;
  torch::nn::Conv2d conv3_;
  torch::nn::BatchNorm2d bn3_;
  torch::nn::Sequential downsample_;
};
TORCH_MODULE(Bottleneck);

class ImageNetResNetImpl : public torch::nn::Module {
 public:
  ImageNetResNetImpl(bool bottleneck, const std::vector<int64_t>& blocks, int64_t channels, int64_t classes)
      : conv1_(torch::nn::Conv2dOptions(channels, 64, 7).stride(2).padding(3).bias(false)),
        bn1_(64),
        fc_(512 * (bottleneck ? BottleneckImpl::kExpansion : BasicBlockImpl::kExpansion), classes) {
    register_module("conv1", conv1_);
    register_module("bn1", bn1_);
    if (bottleneck) {
      add_stages<Bottleneck>(blocks);
    } else {
      add_stages<BasicBlock>(blocks);
    }
    register_module("fc", fc_);
    // torchvision's initialization: Kaiming-normal (fan-out) convolutions; BN starts as identity; fc keeps its default.
    for (auto& module : modules(/*include_self=*/false)) {
      if (auto* conv = module->as<torch::nn::Conv2d>()) {
        torch::nn::init::kaiming_normal_(conv->weight, 0, torch::kFanOut, torch::kReLU);
      } else if (auto* bn = module->as<torch::nn::BatchNorm2d>()) {
        torch::nn::init::ones_(bn->weight);
        torch::nn::init::zeros_(bn->bias);
      }
    }
  }

  at::Tensor forward(const at::Tensor& input) {
    forward_gate(*conv1_);
    forward_gate(*bn1_);
    auto x = torch::relu(bn1_->forward(conv1_->forward(input)));
    x = torch::max_pool2d(x, /*kernel_size=*/3, /*stride=*/2, /*padding=*/1);
    for (auto& stage : stages_) x = forward_gate.forward_each(stage, x);  // one gate per residual block
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    forward_gate(*fc_);
    return fc_->forward(x);
  }

  BlockGate forward_gate;

 private:
  // Stages layer1..layer4 of 64/128/256/512 planes; all but the first halve the resolution in their first block.
  template <typename Block>
  void add_stages(const std::vector<int64_t>& blocks) {
    int64_t in_planes = 64;
    for (size_t stage = 0; stage < blocks.size(); ++stage) {
      const int64_t planes = int64_t{64} << stage;
      torch::nn::Sequential layer;
      for (int64_t block = 0; block < blocks[stage]; ++block) {
        layer->push_back(Block(in_planes, planes, (stage > 0 && block == 0) ? 2 : 1));
        in_planes = planes * Block::Impl::kExpansion;
      }
      stages_.push_back(register_module("layer" + std::to_string(stage + 1), layer));
    }
  }

  torch::nn::Conv2d conv1_;
  torch::nn::BatchNorm2d bn1_;
  std::vector<torch::nn::Sequential> stages_;
  torch::nn::Linear fc_;
};
TORCH_MODULE(ImageNetResNet);

}  // namespace

std::unique_ptr<Model> make_resnet_imagenet(int depth, const InputSpec& input) {
  const std::string name = "resnet" + std::to_string(depth);
  if (depth == 18) {
    return std::make_unique<ModuleModel<ImageNetResNet>>(
        ImageNetResNet(/*bottleneck=*/false, std::vector<int64_t>{2, 2, 2, 2}, input.channels, input.classes), name);
  }
  // He et al. 2016, Table 1: the bottleneck networks differ only in their blocks per stage.
  const std::map<int, std::vector<int64_t>> bottleneck_stages{
      {50, {3, 4, 6, 3}}, {101, {3, 4, 23, 3}}, {152, {3, 8, 36, 3}}};
  const auto stages = bottleneck_stages.find(depth);
  if (stages == bottleneck_stages.end()) {
    throw Error("ImageNet-style ResNet depth must be 18, 50, 101 or 152; got " + std::to_string(depth));
  }
  return std::make_unique<ModuleModel<ImageNetResNet>>(
      ImageNetResNet(/*bottleneck=*/true, stages->second, input.channels, input.classes), name);
}

}  // namespace distsgd::models
