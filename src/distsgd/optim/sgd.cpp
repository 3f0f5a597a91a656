#include "distsgd/optim/sgd.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/zeros.h>

namespace distsgd::optim {

MomentumSgd::MomentumSgd(int64_t numel, double momentum, double weight_decay)
    : velocity_(at::zeros({numel}, at::kFloat)), momentum_(momentum), weight_decay_(weight_decay) {}

void MomentumSgd::step(at::Tensor params, at::Tensor grads, double lr, int64_t offset) {
  at::NoGradGuard no_grad;
  if (weight_decay_ != 0) grads.add_(params, weight_decay_);
  if (momentum_ != 0) {
    // v starts at zero, so the first step gives v = d, as PyTorch's buffer initialization does.
    auto v = velocity_.narrow(0, offset, params.numel());
    v.mul_(momentum_).add_(grads);
    params.add_(v, -lr);
  } else {
    params.add_(grads, -lr);
  }
}

at::Tensor MomentumSgd::direction(const at::Tensor& params, at::Tensor grads, int64_t offset) {
  at::NoGradGuard no_grad;
  if (weight_decay_ != 0) grads.add_(params, weight_decay_);
  if (momentum_ == 0) return grads;
  auto v = velocity_.narrow(0, offset, params.numel());
  v.mul_(momentum_).add_(grads);
  return v;
}

}  // namespace distsgd::optim
