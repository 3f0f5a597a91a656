// Model registry: maps a name (or a TorchScript file) to a freshly initialized model.
#include <filesystem>
#include <functional>

#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/models/builders.hpp"
#include "distsgd/models/model.hpp"

namespace distsgd::models {
namespace {

using Builder = std::function<std::unique_ptr<Model>(const ModelOptions&, const InputSpec&)>;

// Listed in model_names() order.
const std::vector<std::pair<std::string, Builder>>& builders() {
  static const std::vector<std::pair<std::string, Builder>> table = {
      {"mlp", [](const ModelOptions& o, const InputSpec& in) { return make_mlp(o, in); }},
      {"lenet5", [](const ModelOptions&, const InputSpec& in) { return make_lenet5(in); }},
      {"resnet20", [](const ModelOptions&, const InputSpec& in) { return make_resnet_cifar(20, in); }},
      {"resnet32", [](const ModelOptions&, const InputSpec& in) { return make_resnet_cifar(32, in); }},
      {"resnet56", [](const ModelOptions&, const InputSpec& in) { return make_resnet_cifar(56, in); }},
      {"resnet18", [](const ModelOptions&, const InputSpec& in) { return make_resnet_imagenet(18, in); }},
      {"resnet50", [](const ModelOptions&, const InputSpec& in) { return make_resnet_imagenet(50, in); }},
      {"resnet101", [](const ModelOptions&, const InputSpec& in) { return make_resnet_imagenet(101, in); }},
      {"resnet152", [](const ModelOptions&, const InputSpec& in) { return make_resnet_imagenet(152, in); }},
      {"vgg11", [](const ModelOptions& o, const InputSpec& in) { return make_vgg(11, o.batch_norm, in); }},
      {"vgg16", [](const ModelOptions& o, const InputSpec& in) { return make_vgg(16, o.batch_norm, in); }},
      {"gpt-mini", [](const ModelOptions& o, const InputSpec& in) { return make_gpt_mini(o, in); }},
  };
  return table;
}

bool looks_like_torchscript_file(const std::string& name) {
  const std::string suffix = ".pt";
  if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    return true;
  std::error_code ignored;
  return std::filesystem::is_regular_file(name, ignored);
}

void check_input(const InputSpec& input) {
  require(input.channels > 0 && input.height > 0 && input.width > 0,
          "model input must have positive channels, height and width; got " + std::to_string(input.channels) + "x" +
              std::to_string(input.height) + "x" + std::to_string(input.width));
  require(input.classes > 1, "a classifier needs at least 2 classes; got " + std::to_string(input.classes));
}

// The registry's models over byte sequences; the others classify images.
bool is_language_model(const std::string& name) { return name == "gpt-mini"; }

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& entry : builders()) names.push_back(entry.first);
  return names;
}

std::unique_ptr<Model> make_model(const ModelOptions& options, const InputSpec& input) {
  check_input(input);
  require(!input.sequence || is_language_model(options.name),
          "--dataset text holds byte sequences: train a language model on it (--model gpt-mini)");
  for (const auto& [name, build] : builders()) {
    if (name == options.name) return build(options, input);
  }
  if (looks_like_torchscript_file(options.name)) return load_torchscript(options.name, input);
  throw Error("unknown model '" + options.name + "'; valid: " + join(model_names()) + " or a TorchScript .pt file");
}

int64_t count_parameters(Model& model) {
  int64_t total = 0;
  for (const auto& parameter : model.parameters()) total += parameter.numel();
  return total;
}

}  // namespace distsgd::models
