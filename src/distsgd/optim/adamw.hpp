// AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization", ICLR 2019) over a flat buffer or any
// contiguous slice of it, with PyTorch's semantics (torch.optim.AdamW, amsgrad false): p -= lr*wd*p (decoupled
// decay, before the step); m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; p -= lr/(1 - b1^t) * m /
// (sqrt(v)/sqrt(1 - b2^t) + eps). One fused pass over p, g, m and v (optim/kernels.hpp, adamw), bit-identical to
// torch::optim::AdamW's chain of ATen calls.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>

namespace distsgd::optim {

struct AdamWOptions {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;  // PyTorch's defaults but its wd (1e-2)
};

class AdamW {
 public:
  AdamW(int64_t numel, AdamWOptions options);

  // One step of params[offset, offset+n) from grads of the same length (n = params.numel()); both contiguous
  // float. The gradient is divided by `divide_grads_by` first, in the same pass (a sum of n gradients -> their
  // mean). The step count t of the bias corrections is kept per slice, as PyTorch keeps it per parameter: a slice
  // is stepped whole each time (the flat buffer, or the same pieces every iteration, e.g. AR-SGD multistep's
  // 1/n of each bucket); a range that overlaps a slice stepped before without being that slice is refused.
  void step(at::Tensor params, at::Tensor grads, double lr, int64_t offset = 0, double divide_grads_by = 1);

  at::Tensor& exp_avg() { return exp_avg_; }
  at::Tensor& exp_avg_sq() { return exp_avg_sq_; }
  const AdamWOptions& options() const { return options_; }
  // Steps taken by the slice at `offset` of `numel` elements (0 if never stepped).
  int64_t steps_of(int64_t offset, int64_t numel) const;

  // The step counts for checkpoints: int64 [slices, 3] rows (offset, numel, steps), and back.
  at::Tensor step_counts() const;
  void set_step_counts(const at::Tensor& counts);

 private:
  struct Slice {
    int64_t numel = 0, steps = 0;
  };
  // The slice [offset, offset+numel), registered on its first step; throws when the range overlaps another.
  Slice& slice_at(int64_t offset, int64_t numel);

  AdamWOptions options_;
  int64_t numel_;
  at::Tensor exp_avg_, exp_avg_sq_;
  std::map<int64_t, Slice> slices_;  // by offset; disjoint
};

}  // namespace distsgd::optim
