#include "distsgd/optim/adamw.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/optim/float_buffer.hpp"
#include "distsgd/optim/kernels.hpp"

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <iterator>
#include <string>

namespace distsgd::optim {

AdamW::AdamW(int64_t numel, AdamWOptions options)
    : options_(options),
      numel_(numel),
      exp_avg_(at::zeros({numel}, at::kFloat)),
      exp_avg_sq_(at::zeros({numel}, at::kFloat)) {}

AdamW::Slice& AdamW::slice_at(int64_t offset, int64_t numel) {
  auto it = slices_.find(offset);
  if (it != slices_.end() && it->second.numel == numel) return it->second;
  // A new slice must not overlap one stepped before: its elements would be at two step counts.
  const auto overlaps = [&](const std::map<int64_t, Slice>::const_iterator& s) {
    return s != slices_.end() && s->first < offset + numel && offset < s->first + s->second.numel;
  };
  auto after = slices_.lower_bound(offset);
  const bool clash = overlaps(after) || (after != slices_.begin() && overlaps(std::prev(after)));
  require(!clash, "AdamW: the slice [" + std::to_string(offset) + ", +" + std::to_string(numel) +
                      ") overlaps a slice stepped before without being it (step each slice whole, every time)");
  return slices_.emplace(offset, Slice{numel, 0}).first->second;
}

void AdamW::step(at::Tensor params, at::Tensor grads, double lr, int64_t offset, double divide_grads_by) {
  const int64_t n = params.numel();
  require(grads.numel() == n && offset >= 0 && offset + n <= numel_,
          "AdamW: the gradient or the slice does not match the parameters");
  if (n == 0) return;
  Slice& slice = slice_at(offset, n);
  ++slice.steps;
  kernels::AdamWStep step;
  step.lr = lr;
  step.beta1 = options_.beta1;
  step.beta2 = options_.beta2;
  step.eps = options_.eps;
  step.weight_decay = options_.weight_decay;
  step.step = slice.steps;
  step.divisor = divide_grads_by;
  kernels::adamw(floats(params), floats(grads), floats(exp_avg_) + offset, floats(exp_avg_sq_) + offset, length(params),
                 step);
}

int64_t AdamW::steps_of(int64_t offset, int64_t numel) const {
  const auto it = slices_.find(offset);
  return it != slices_.end() && it->second.numel == numel ? it->second.steps : 0;
}

at::Tensor AdamW::step_counts() const {
  at::Tensor counts = at::empty({static_cast<int64_t>(slices_.size()), 3}, at::kLong);
  auto* row = counts.data_ptr<int64_t>();
  for (const auto& [offset, slice] : slices_) {
    *row++ = offset;
    *row++ = slice.numel;
    *row++ = slice.steps;
  }
  return counts;
}

void AdamW::set_step_counts(const at::Tensor& counts) {
  require(counts.dim() == 2 && counts.size(1) == 3, "AdamW: step counts must be rows of (offset, numel, steps)");
  const at::Tensor rows = counts.to(at::kLong).contiguous();
  slices_.clear();
  const auto* row = rows.data_ptr<int64_t>();
  for (int64_t r = 0; r < rows.size(0); ++r, row += 3) {
    require(row[0] >= 0 && row[1] > 0 && row[0] + row[1] <= numel_ && row[2] >= 0,
            "AdamW: the checkpoint's step counts do not fit " + std::to_string(numel_) + " parameters");
    slice_at(row[0], row[1]).steps = row[2];
  }
}

}  // namespace distsgd::optim
