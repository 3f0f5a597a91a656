// The float32 memory of a contiguous tensor, as the kernels (optim/kernels.hpp) take it.
#pragma once
#include "distsgd/core/error.hpp"

#include <ATen/core/Tensor.h>

#include <cstddef>

namespace distsgd::optim {

// The data of `t`, which must be a contiguous float32 tensor (a flat buffer or a narrow() of one).
inline float* floats(const at::Tensor& t) {
  require(t.scalar_type() == at::kFloat && t.is_contiguous(), "a fused kernel needs a contiguous float32 buffer");
  return static_cast<float*>(t.data_ptr());
}

inline size_t length(const at::Tensor& t) { return static_cast<size_t>(t.numel()); }

}  // namespace distsgd::optim
