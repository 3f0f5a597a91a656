// One builder per model family; the registry (registry.cpp) picks among them by name.
#pragma once
#include <memory>
#include <string>

#include "distsgd/models/model.hpp"

namespace distsgd::models {

std::unique_ptr<Model> make_mlp(const ModelOptions& options, const InputSpec& input);
std::unique_ptr<Model> make_lenet5(const InputSpec& input);
// depth is 20, 32 or 56 (any 6n+2 works).
std::unique_ptr<Model> make_resnet_cifar(int depth, const InputSpec& input);
// depth is 18 or 50.
std::unique_ptr<Model> make_resnet_imagenet(int depth, const InputSpec& input);
// depth is 11 or 16.
std::unique_ptr<Model> make_vgg(int depth, bool batch_norm, const InputSpec& input);
// A decoder-only transformer over bytes; input.width is its context.
std::unique_ptr<Model> make_gpt_mini(const ModelOptions& options, const InputSpec& input);
std::unique_ptr<Model> load_torchscript(const std::string& path, const InputSpec& input);

}  // namespace distsgd::models
