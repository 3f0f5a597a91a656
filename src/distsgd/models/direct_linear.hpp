// A fully connected layer that can write its gradients straight into the flat gradient buffer.
//
// With torch::nn::Linear, each backward allocates a fresh weight gradient, and FlatParameters has autograd add it
// into the buffer, which must be zeroed first: for mlp (23 MB of parameters) that is four passes over memory per step
// that produce nothing. DirectLinear's backward computes the weight gradient with the GEMM writing into the
// parameter's slot of the buffer and the bias gradient with a sum into its slot, then hands autograd an alias of the
// slot, which autograd adopts as the parameter's gradient without copying (its rule for a gradient that nothing
// else refers to). Parameters, names ("weight", "bias") and initialization are torch::nn::Linear's, so a seed gives
// the same model either way.
#pragma once
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

namespace distsgd::models {

class DirectLinearImpl : public torch::nn::Module {
 public:
  DirectLinearImpl(int64_t inputs, int64_t outputs);

  // [B, inputs] -> [B, outputs].
  at::Tensor forward(const at::Tensor& input);

  // Where backward writes the gradients from now on: tensors of the parameters' shapes (views of the flat gradient
  // buffer). Used only while the parameter's gradient is undefined when backward reaches this layer (FlatParameters
  // clears it before each step); otherwise, and with undefined destinations, the gradient is a fresh tensor that
  // autograd adds to the one there, as torch::nn::Linear's.
  void set_gradient_destinations(at::Tensor weight_destination, at::Tensor bias_destination);

  at::Tensor weight, bias;

 private:
  at::Tensor weight_destination_, bias_destination_;
};
TORCH_MODULE(DirectLinear);

}  // namespace distsgd::models
