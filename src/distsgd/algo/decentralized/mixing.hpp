// Mixing weights: how a worker combines its model with what a peer sent. In-place tensor operations plus the
// scalar weight bookkeeping in double, independent of who the peer is (topology) and how it arrived (protocol).
#pragma once
#include <ATen/core/Tensor.h>

namespace distsgd::algo::decentralized {

// Pairwise averaging with weights 1/2, 1/2 (gossip pull, AD-PSGD): x <- (x + y) / 2.
void average_into(at::Tensor& x, const at::Tensor& y);

// AD-PSGD's active side when its model may have moved since it sent `sent` (a gradient was applied meanwhile):
// x <- x + (peer - sent) / 2, which is (sent + peer) / 2 plus whatever changed x in between.
void average_with_sent(at::Tensor& x, const at::Tensor& sent, const at::Tensor& peer);

// Push-sum / GoSGD state in de-biased form: z = x / w (the model gradients are evaluated at) and the weight w.
// Sending halves the weight and ships (z, w/2); the numerator w*z is split in two equal halves.
// Returns the weight that travels with the message.
double split_weight(double& w);

// Merge a received (z_s, w_s): z <- (w z + w_s z_s) / (w + w_s), w <- w + w_s. The numerators add up (push-sum)
// which is GoSGD's weighted average.
void weighted_merge(at::Tensor& z, double& w, const at::Tensor& z_s, double w_s);

}  // namespace distsgd::algo::decentralized
