// Parameters and gradients of a model as views into one contiguous buffer each, so that the whole model or any
// contiguous shard of it moves in one message and the optimizer runs as a few fused vector operations.
#pragma once
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace distsgd::models {
class Model;
}

namespace distsgd::optim {

struct ParameterSlot {
  std::string name;
  int64_t offset = 0;  // in elements, into the flat buffers
  int64_t numel = 0;
};

class FlatParameters {
 public:
  // Copies the model's current values into the flat buffer and rebinds every parameter (and its gradient)
  // to a view of it. The model must outlive this object.
  explicit FlatParameters(models::Model& model);

  at::Tensor& params() { return params_; }
  at::Tensor& grads() { return grads_; }
  const std::vector<ParameterSlot>& slots() const { return slots_; }
  int64_t numel() const { return params_.numel(); }
  void zero_grads() { grads_.zero_(); }

 private:
  at::Tensor params_;
  at::Tensor grads_;
  std::vector<ParameterSlot> slots_;
};

}  // namespace distsgd::optim
