#include "distsgd/algo/ps/elastic.hpp"

#include <torch/torch.h>

namespace distsgd::algo::ps {

void elastic_exchange(at::Tensor& x_tilde, const at::Tensor& x_worker, double alpha, at::Tensor& worker_out) {
  torch::NoGradGuard no_grad;
  auto e = (x_worker - x_tilde).mul_(alpha);
  x_tilde.add_(e);
  torch::sub_out(worker_out, x_worker, e);
}

}  // namespace distsgd::algo::ps
