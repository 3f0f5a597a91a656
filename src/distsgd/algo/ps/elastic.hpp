// The elastic exchange of EASGD (Zhang et al. 2015), on a worker's slice x_i and the server's x~:
// e = alpha * (x_i - x~); x~ <- x~ + e; x_i <- x_i - e. The sum x~ + x_i is preserved.
#pragma once
#include <ATen/core/Tensor.h>

namespace distsgd::algo::ps {

// Updates x_tilde in place and writes the worker's new parameters into worker_out.
void elastic_exchange(at::Tensor& x_tilde, const at::Tensor& x_worker, double alpha, at::Tensor& worker_out);

}  // namespace distsgd::algo::ps
