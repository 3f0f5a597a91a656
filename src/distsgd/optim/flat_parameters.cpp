#include "distsgd/optim/flat_parameters.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/core/runtime.hpp"
#include "distsgd/models/model.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include "distsgd/optim/gradient_hooks.hpp"

namespace distsgd::optim {

FlatParameters::FlatParameters(models::Model& model) : model_(model) {
  parameters_ = model.parameters();
  auto& parameters = parameters_;
  auto names = model.parameter_names();
  int64_t total = 0;
  for (size_t i = 0; i < parameters.size(); ++i) {
    slots_.push_back({names.at(i), total, parameters[i].numel()});
    total += parameters[i].numel();
  }
  params_ = at::empty({total}, at::kFloat);
  grads_ = at::zeros({total}, at::kFloat);
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < parameters.size(); ++i) {
    auto& p = parameters[i];
    const auto& slot = slots_[i];
    auto param_view = params_.narrow(0, slot.offset, slot.numel).view(p.sizes());
    param_view.copy_(p);
    p.set_data(param_view);
    grad_views_.push_back(grads_.narrow(0, slot.offset, slot.numel).view(p.sizes()));
    // A defined gradient is accumulated into in place, so backward outside begin/end_backward adds into grads_.
    p.mutable_grad() = grad_views_.back();
  }
  arrived_.assign(parameters.size(), 1);
  // Installed before any algorithm's hook, so those run after the gradient is in its slot.
  hooks_ = std::make_unique<GradientHooks>(parameters, [this](size_t i) { gradient_arrived(i); });
  model_.set_gradient_destinations(grad_views_);
}

FlatParameters::~FlatParameters() { model_.set_gradient_destinations({}); }

void FlatParameters::set_virtual_backward_seconds(std::vector<double> seconds_per_parameter) {
  require(seconds_per_parameter.empty() || seconds_per_parameter.size() == parameters_.size(),
          "backward times for " + std::to_string(seconds_per_parameter.size()) +
              " parameter tensors, but the model has " + std::to_string(parameters_.size()));
  virtual_backward_seconds_ = std::move(seconds_per_parameter);
}

void FlatParameters::gradient_arrived(size_t i) {
  if (!virtual_backward_seconds_.empty()) runtime::spend_compute(virtual_backward_seconds_[i]);
  arrived_[i] = 1;
  at::Tensor& grad = parameters_[i].mutable_grad();
  const at::Tensor& slot = grad_views_[i];
  if (grad.defined() && grad.data_ptr() == slot.data_ptr()) return;  // written in place (or accumulated into)
  at::NoGradGuard no_grad;
  if (grad.defined()) {
    slot.copy_(grad);
  } else {
    slot.zero_();  // autograd's gradient was undefined: zero
  }
  grad = slot;
}

void FlatParameters::begin_backward() {
  // Undefined gradients: autograd adopts what a layer computes instead of adding it to the slot.
  for (auto& p : parameters_) p.mutable_grad() = at::Tensor();
  arrived_.assign(parameters_.size(), 0);
}

void FlatParameters::end_backward() {
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    if (arrived_[i]) continue;
    grad_views_[i].zero_();  // no gradient this step (a parameter the loss does not reach)
    parameters_[i].mutable_grad() = grad_views_[i];
  }
  arrived_.assign(parameters_.size(), 1);
}

}  // namespace distsgd::optim
