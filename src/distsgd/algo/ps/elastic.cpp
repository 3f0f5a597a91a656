#include "distsgd/algo/ps/elastic.hpp"

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/sub.h>

namespace distsgd::algo::ps {

void elastic_exchange(at::Tensor& x_tilde, const at::Tensor& x_worker, double alpha, at::Tensor& worker_out) {
  at::NoGradGuard no_grad;
  auto e = (x_worker - x_tilde).mul_(alpha);
  x_tilde.add_(e);
  at::sub_out(worker_out, x_worker, e);
}

}  // namespace distsgd::algo::ps
