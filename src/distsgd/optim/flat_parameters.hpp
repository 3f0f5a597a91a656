// Parameters and gradients of a model as views into one contiguous buffer each, so that the whole model or any
// contiguous shard of it moves in one message and the optimizer runs as a few fused vector operations.
#pragma once
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

namespace distsgd::models {
class Model;
}

namespace distsgd::optim {

class GradientHooks;

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
  ~FlatParameters();
  FlatParameters(const FlatParameters&) = delete;
  FlatParameters& operator=(const FlatParameters&) = delete;

  at::Tensor& params() { return params_; }
  at::Tensor& grads() { return grads_; }
  const std::vector<ParameterSlot>& slots() const { return slots_; }
  int64_t numel() const { return params_.numel(); }
  void zero_grads() { grads_.zero_(); }

  // A training step's backward writes each gradient into its slot of grads() once, without zeroing the buffer and
  // adding to it (four passes over the buffer where this is one, or none for layers that write their slot directly,
  // see models::DirectLinear). Call begin_backward() right before loss.backward() and end_backward() right after.
  // Each slot holds its gradient by the time autograd's hooks of that parameter run (BucketReadyTracker's), and a
  // parameter that got no gradient has a slot of zeros. Between end_backward() and the next begin_backward(), a
  // further backward adds to grads() as with zero_grads().
  void begin_backward();
  void end_backward();
  // Inside a virtual cluster: the time each parameter's gradient takes on the simulated device, spent on the
  // virtual clock when autograd has it (before any algorithm's hook sees it), so wait-free backprop's pushes start
  // when they would. Nothing in a real run, where the computation itself takes the time.
  void set_virtual_backward_seconds(std::vector<double> seconds_per_parameter);

 private:
  // Called by autograd once parameter i's gradient is set: moves it into its slot if it is not already there.
  void gradient_arrived(size_t i);

  models::Model& model_;
  std::vector<at::Tensor> parameters_;  // the model's, same tensors (a gradient set here is the model's)
  at::Tensor params_;
  at::Tensor grads_;
  std::vector<ParameterSlot> slots_;
  std::vector<at::Tensor> grad_views_;  // per parameter, its slot of grads_ in the parameter's shape
  std::vector<char> arrived_;           // per parameter: its gradient came this backward
  std::unique_ptr<GradientHooks> hooks_;
  std::vector<double> virtual_backward_seconds_;  // per parameter; empty: none
};

}  // namespace distsgd::optim
