#include "distsgd/algo/decentralized/mixing.hpp"

#include "distsgd/core/error.hpp"

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>

namespace distsgd::algo::decentralized {

void average_into(at::Tensor& x, const at::Tensor& y) {
  at::NoGradGuard no_grad;
  x.add_(y).mul_(0.5);
}

void average_with_sent(at::Tensor& x, const at::Tensor& sent, const at::Tensor& peer) {
  at::NoGradGuard no_grad;
  x.add_(peer - sent, 0.5);
}

double split_weight(double& w) {
  w /= 2;
  return w;
}

void weighted_merge(at::Tensor& z, double& w, const at::Tensor& z_s, double w_s) {
  require(w_s >= 0 && w + w_s > 0, "gossip: a message with weight " + std::to_string(w_s) + " cannot be merged");
  at::NoGradGuard no_grad;
  const double total = w + w_s;
  z.mul_(w / total).add_(z_s, w_s / total);
  w = total;
}

}  // namespace distsgd::algo::decentralized
