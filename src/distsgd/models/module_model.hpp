// Adapts a C++ torch::nn module (through its ModuleHolder) to the Model interface, so every registry model
// exposes parameters, buffers, train/eval and the forward gate the same way.
#pragma once
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <utility>
#include <vector>

#include "distsgd/models/direct_linear.hpp"
#include "distsgd/models/forward_gate.hpp"
#include "distsgd/models/model.hpp"

namespace distsgd::models {

// Holder is a TORCH_MODULE holder whose module has `at::Tensor forward(const at::Tensor&)` and a public
// `BlockGate forward_gate` that its forward opens before each block.
template <typename Holder>
class ModuleModel final : public Model {
 public:
  ModuleModel(Holder module, std::string name) : module_(std::move(module)), name_(std::move(name)) {}

  at::Tensor forward(const at::Tensor& input) override { return module_->forward(input); }

  // Module::parameters/buffers walk the tree depth-first in registration order, which fixes the flat layout.
  std::vector<at::Tensor> parameters() override { return module_->parameters(/*recurse=*/true); }

  std::vector<std::string> parameter_names() override {
    std::vector<std::string> names;
    for (const auto& item : module_->named_parameters(/*recurse=*/true)) names.push_back(item.key());
    return names;
  }

  std::vector<at::Tensor> buffers() override { return module_->buffers(/*recurse=*/true); }

  void set_training(bool training) override { module_->train(training); }

  std::string name() const override { return name_; }

  bool supports_forward_gate() const override { return true; }
  void set_forward_gate(ForwardGate gate) override { module_->forward_gate.install(std::move(gate), parameters()); }

  void set_gradient_destinations(const std::vector<at::Tensor>& destinations) override {
    const auto all = parameters();
    auto destination_of = [&](const at::Tensor& parameter) {
      for (size_t i = 0; i < all.size() && i < destinations.size(); ++i) {
        if (all[i].unsafeGetTensorImpl() == parameter.unsafeGetTensorImpl()) return destinations[i];
      }
      return at::Tensor();
    };
    for (const auto& module : module_->modules(/*include_self=*/false)) {
      if (auto* linear = module->template as<DirectLinear>()) {
        linear->set_gradient_destinations(destination_of(linear->weight), destination_of(linear->bias));
      }
    }
  }

 private:
  Holder module_;
  std::string name_;
};

}  // namespace distsgd::models
