#include "distsgd/algo/decentralized/mixing.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/optim/float_buffer.hpp"
#include "distsgd/optim/kernels.hpp"

#include <ATen/core/Tensor.h>

#include <string>

namespace distsgd::algo::decentralized {

namespace {

void require_same_size(const at::Tensor& x, const at::Tensor& y) {
  require(x.numel() == y.numel(),
          "gossip: a peer's model has " + std::to_string(y.numel()) + " values, not " + std::to_string(x.numel()));
}

}  // namespace

// Each rule is one pass of a fused kernel (optim/kernels.hpp), equal bit for bit to the ATen chain in its comment.

void average_into(at::Tensor& x, const at::Tensor& y) {
  require_same_size(x, y);
  optim::kernels::average(optim::floats(x), optim::floats(y), optim::length(x));  // x.add_(y).mul_(0.5)
}

void average_with_sent(at::Tensor& x, const at::Tensor& sent, const at::Tensor& peer) {
  require_same_size(x, sent);
  require_same_size(x, peer);
  // x.add_(peer - sent, 0.5)
  optim::kernels::add_half_difference(optim::floats(x), optim::floats(sent), optim::floats(peer), optim::length(x));
}

double split_weight(double& w) {
  w /= 2;
  return w;
}

void weighted_merge(at::Tensor& z, double& w, const at::Tensor& z_s, double w_s) {
  require(w_s >= 0 && w + w_s > 0, "gossip: a message with weight " + std::to_string(w_s) + " cannot be merged");
  require_same_size(z, z_s);
  const double total = w + w_s;
  // z.mul_(w / total).add_(z_s, w_s / total)
  optim::kernels::axpby(optim::floats(z), optim::floats(z_s), optim::length(z), w / total, w_s / total);
  w = total;
}

}  // namespace distsgd::algo::decentralized
