#include "distsgd/optim/gradient_hooks.hpp"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <utility>

namespace distsgd::optim {

struct GradientHooks::Installed {
  // Kept alive, or autograd makes new accumulators without our hooks.
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;
  std::vector<uintptr_t> keys;
  std::function<void(size_t)> on_gradient;
};

GradientHooks::GradientHooks(const std::vector<at::Tensor>& parameters, std::function<void(size_t)> on_gradient)
    : installed_(std::make_unique<Installed>()) {
  installed_->on_gradient = std::move(on_gradient);
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (!parameters[i].requires_grad()) continue;
    auto accumulator = torch::autograd::impl::grad_accumulator(parameters[i]);
    auto key = accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [installed = installed_.get(), i](const torch::autograd::variable_list& outputs,
                                          const torch::autograd::variable_list&) {
          installed->on_gradient(i);
          return outputs;
        }));
    installed_->accumulators.push_back(std::move(accumulator));
    installed_->keys.push_back(key);
  }
}

GradientHooks::~GradientHooks() {
  for (size_t i = 0; i < installed_->accumulators.size(); ++i) {
    installed_->accumulators[i]->del_post_hook(installed_->keys[i]);
  }
}

}  // namespace distsgd::optim
