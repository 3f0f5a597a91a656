// Momentum SGD with weight decay over a flat buffer or any contiguous slice of it, with PyTorch's semantics
// (torch.optim.SGD, dampening 0, no Nesterov): d = g + wd*p; v = mu*v + d; p -= lr*v.
#pragma once
#include <ATen/core/Tensor.h>

namespace distsgd::optim {

class MomentumSgd {
 public:
  MomentumSgd(int64_t numel, double momentum, double weight_decay);

  // Updates params[offset, offset+n) from grads of the same length (n = params.numel()).
  // grads is modified (weight decay is added into it).
  void step(at::Tensor params, at::Tensor grads, double lr, int64_t offset = 0);

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
};

}  // namespace distsgd::optim
