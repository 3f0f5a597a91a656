#include "distsgd/optim/sgd.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/optim/float_buffer.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/ops/zeros.h>

namespace distsgd::optim {

MomentumSgd::MomentumSgd(int64_t numel, double momentum, double weight_decay, bool nesterov)
    : velocity_(at::zeros({numel}, at::kFloat)),
      momentum_(momentum),
      weight_decay_(weight_decay),
      nesterov_(nesterov) {}

void MomentumSgd::step(at::Tensor params, at::Tensor grads, double lr, int64_t offset, StepOptions options) {
  const int64_t n = params.numel();
  require(grads.numel() == n && offset >= 0 && offset + n <= velocity_.numel(),
          "momentum SGD: the gradient or the slice does not match the parameters");
  // v starts at zero, so the first step gives v = d, as PyTorch's buffer initialization does.
  kernels::MomentumStep step{lr, momentum_, weight_decay_, nesterov_, options.divide_grads_by, options.grads_after};
  float* v = momentum_ != 0 ? floats(velocity_) + offset : nullptr;
  kernels::momentum_sgd(floats(params), floats(grads), v, length(params), step);
}

at::Tensor MomentumSgd::direction(const at::Tensor& params, at::Tensor grads, int64_t offset) {
  const int64_t n = params.numel();
  require(grads.numel() == n && offset >= 0 && offset + n <= velocity_.numel(),
          "momentum SGD: the gradient or the slice does not match the parameters");
  float* v = momentum_ != 0 ? floats(velocity_) + offset : nullptr;
  kernels::momentum_direction(floats(params), floats(grads), v, length(params), momentum_, weight_decay_);
  if (momentum_ == 0) return grads;
  return velocity_.narrow(0, offset, n);
}

}  // namespace distsgd::optim
