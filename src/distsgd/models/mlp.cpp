// Multi-layer perceptron on the flattened image: the communication-heavy, compute-light baseline.
#include <torch/torch.h>

#include "distsgd/core/error.hpp"
#include "distsgd/models/builders.hpp"
#include "distsgd/models/direct_linear.hpp"
#include "distsgd/models/module_model.hpp"

namespace distsgd::models {
namespace {

class MlpImpl : public torch::nn::Module {
 public:
  MlpImpl(int64_t inputs, int64_t width, int64_t hidden_layers, int64_t classes) {
    int64_t previous = inputs;
    for (int64_t i = 0; i < hidden_layers; ++i) {
      layers_->push_back(DirectLinear(previous, width));
      layers_->push_back(torch::nn::ReLU());
      previous = width;
    }
    layers_->push_back(DirectLinear(previous, classes));
    register_module("layers", layers_);
  }

  at::Tensor forward(const at::Tensor& input) { return forward_gate.forward_each(layers_, input.flatten(1)); }

  BlockGate forward_gate;

 private:
  torch::nn::Sequential layers_;
};
TORCH_MODULE(Mlp);

}  // namespace

std::unique_ptr<Model> make_mlp(const ModelOptions& options, const InputSpec& input) {
  require(options.mlp_width > 0, "mlp width must be positive; got " + std::to_string(options.mlp_width));
  require(options.mlp_hidden_layers >= 0,
          "mlp hidden layers must be zero or more; got " + std::to_string(options.mlp_hidden_layers));
  const int64_t inputs = input.channels * input.height * input.width;
  return std::make_unique<ModuleModel<Mlp>>(Mlp(inputs, options.mlp_width, options.mlp_hidden_layers, input.classes),
                                            "mlp");
}

}  // namespace distsgd::models
