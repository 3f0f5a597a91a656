#include "distsgd/algo/ps/elastic.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/optim/float_buffer.hpp"
#include "distsgd/optim/kernels.hpp"

#include <ATen/core/Tensor.h>

namespace distsgd::algo::ps {

void elastic_exchange(at::Tensor& x_tilde, const at::Tensor& x_worker, double alpha, at::Tensor& worker_out) {
  require(x_worker.numel() == x_tilde.numel() && worker_out.numel() == x_tilde.numel(),
          "EASGD: the worker's slice and the server's differ in size");
  // One pass: e = (x_i - x~) * alpha; x~ += e; out = x_i - e.
  optim::kernels::elastic(optim::floats(x_tilde), optim::floats(x_worker), optim::floats(worker_out),
                          optim::length(x_tilde), alpha);
}

}  // namespace distsgd::algo::ps
