// Models brought by the user as TorchScript files (torch.jit.script(model).save("net.pt") in Python).
#include <torch/script.h>
#include <torch/torch.h>

#include <filesystem>

#include "distsgd/core/error.hpp"
#include "distsgd/models/builders.hpp"

namespace distsgd::models {
namespace {

std::string shape_text(at::IntArrayRef sizes) {
  std::string text = "[";
  for (size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "]";
}

class TorchScriptModel final : public Model {
 public:
  TorchScriptModel(torch::jit::script::Module module, std::string path)
      : module_(std::move(module)), path_(std::move(path)) {}

  at::Tensor forward(const at::Tensor& input) override { return module_.forward({input}).toTensor(); }

  // Frozen parameters (requires_grad=False) are left out: they are neither trained nor exchanged.
  std::vector<at::Tensor> parameters() override {
    std::vector<at::Tensor> result;
    for (const auto& parameter : module_.parameters(/*recurse=*/true)) {
      if (parameter.requires_grad()) result.push_back(parameter);
    }
    return result;
  }

  std::vector<std::string> parameter_names() override {
    std::vector<std::string> names;
    for (const auto& parameter : module_.named_parameters(/*recurse=*/true)) {
      if (parameter.value.requires_grad()) names.push_back(parameter.name);
    }
    return names;
  }

  std::vector<at::Tensor> buffers() override {
    std::vector<at::Tensor> result;
    for (const auto& buffer : module_.buffers(/*recurse=*/true)) result.push_back(buffer);
    return result;
  }

  void set_training(bool training) override { module_.train(training); }

  std::string name() const override { return path_; }

 private:
  torch::jit::script::Module module_;
  std::string path_;
};

}  // namespace

std::unique_ptr<Model> load_torchscript(const std::string& path, const InputSpec& input) {
  std::error_code ignored;
  require(std::filesystem::is_regular_file(path, ignored),
          "model file " + path + " does not exist (expected a TorchScript file saved with torch.jit.save)");
  torch::jit::script::Module module;
  try {
    module = torch::jit::load(path);
  } catch (const c10::Error& e) {
    throw Error("cannot read model file " + path +
                " as TorchScript (save it with torch.jit.script(model).save): " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw Error("cannot read model file " + path + " as TorchScript: " + e.what());
  }

  // One forward in eval mode (BatchNorm must not learn from it) checks the file fits the dataset before training.
  const int64_t batch = 2;
  const std::vector<int64_t> input_shape = {batch, input.channels, input.height, input.width};
  module.eval();
  c10::IValue result;
  try {
    torch::NoGradGuard no_grad;
    result = module.forward({torch::zeros(input_shape)});
  } catch (const c10::Error& e) {
    throw Error("model file " + path + " fails on a batch of shape " + shape_text(input_shape) + ": " +
                e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw Error("model file " + path + " fails on a batch of shape " + shape_text(input_shape) + ": " + e.what());
  }
  require(result.isTensor(),
          "model file " + path + " must return one tensor of logits; it returns " + result.tagKind());
  const at::Tensor output = result.toTensor();
  require(output.dim() == 2 && output.size(0) == batch && output.size(1) == input.classes,
          "model file " + path + " outputs shape " + shape_text(output.sizes()) + " but dataset has " +
              std::to_string(input.classes) + " classes (expected " + shape_text({batch, input.classes}) +
              " for input " + shape_text(input_shape) + ")");
  module.train(true);  // like the registry models, start in training mode
  return std::make_unique<TorchScriptModel>(std::move(module), path);
}

}  // namespace distsgd::models
