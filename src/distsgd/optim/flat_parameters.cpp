#include "distsgd/optim/flat_parameters.hpp"

#include "distsgd/models/model.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

namespace distsgd::optim {

FlatParameters::FlatParameters(models::Model& model) {
  auto parameters = model.parameters();
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
    // A defined gradient is accumulated into in place, so backward writes straight into grads_.
    p.mutable_grad() = grads_.narrow(0, slot.offset, slot.numel).view(p.sizes());
  }
}

}  // namespace distsgd::optim
