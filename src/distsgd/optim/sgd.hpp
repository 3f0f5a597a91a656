// Momentum SGD with weight decay over a flat buffer or any contiguous slice of it, with PyTorch's semantics
// (torch.optim.SGD, dampening 0): d = g + wd*p; v = mu*v + d; p -= lr*v (Nesterov: p -= lr*(d + mu*v)).
// One fused pass over p, g and v (optim/kernels.hpp), bit-identical to the chain of ATen calls.
#pragma once
#include "distsgd/optim/kernels.hpp"

#include <ATen/core/Tensor.h>

namespace distsgd::optim {

struct StepOptions {
  // The gradient is divided by it first: a sum of n gradients -> their mean, in the same pass.
  double divide_grads_by = 1;
  // What the step leaves in grads: unchanged (the default: one write less), g/divisor + wd*p, or zeros.
  kernels::GradsAfter grads_after = kernels::GradsAfter::kUnchanged;
};

class MomentumSgd {
 public:
  MomentumSgd(int64_t numel, double momentum, double weight_decay, bool nesterov = false);

  // Updates params[offset, offset+n) from grads of the same length (n = params.numel()); both contiguous float.
  void step(at::Tensor params, at::Tensor grads, double lr, int64_t offset = 0, StepOptions options = {});

  // The update direction without applying it: grads += wd*params; v = mu*v + grads; returns v's slice
  // (or grads itself without momentum). For algorithms that send the direction instead of the gradient.
  at::Tensor direction(const at::Tensor& params, at::Tensor grads, int64_t offset = 0);

  at::Tensor& momentum_buffer() { return velocity_; }
  double momentum() const { return momentum_; }
  double weight_decay() const { return weight_decay_; }

 private:
  at::Tensor velocity_;
  double momentum_;
  double weight_decay_;
  bool nesterov_;
};

}  // namespace distsgd::optim
