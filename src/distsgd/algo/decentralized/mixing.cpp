#include "distsgd/algo/decentralized/mixing.hpp"

#include "distsgd/core/error.hpp"

#include <torch/torch.h>

namespace distsgd::algo::decentralized {

void average_into(at::Tensor& x, const at::Tensor& y) {
  torch::NoGradGuard no_grad;
  x.add_(y).mul_(0.5);
}

void average_with_sent(at::Tensor& x, const at::Tensor& sent, const at::Tensor& peer) {
  torch::NoGradGuard no_grad;
  x.add_(peer - sent, 0.5);
}

double split_weight(double& w) {
  w /= 2;
  return w;
}

void weighted_merge(at::Tensor& z, double& w, const at::Tensor& z_s, double w_s) {
  require(w_s >= 0 && w + w_s > 0, "gossip: a message with weight " + std::to_string(w_s) + " cannot be merged");
  torch::NoGradGuard no_grad;
  const double total = w + w_s;
  z.mul_(w / total).add_(z_s, w_s / total);
  w = total;
}

}  // namespace distsgd::algo::decentralized
