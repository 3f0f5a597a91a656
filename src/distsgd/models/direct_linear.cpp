#include "distsgd/models/direct_linear.hpp"

#include <torch/torch.h>

#include <cmath>
#include <utility>

#include "distsgd/core/error.hpp"

namespace distsgd::models {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Whether backward may write this parameter's gradient into `destination`: the destination is set and the parameter
// has no gradient yet, so autograd will adopt the alias instead of adding it to a gradient that may be the same memory.
bool writes_directly(AutogradContext* ctx, const char* parameter, const char* destination) {
  return ctx->saved_data.count(destination) > 0 && !ctx->saved_data[parameter].toTensor().grad().defined();
}

// Where backward writes (not tensors autograd should see as inputs: passed in a struct).
struct Destinations {
  at::Tensor weight, bias;
};

struct DirectLinearFunction : torch::autograd::Function<DirectLinearFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias, const Destinations& destinations) {
    ctx->save_for_backward({input, weight});
    // The parameters themselves (not saved copies): backward asks whether they already hold a gradient.
    ctx->saved_data["weight"] = weight;
    ctx->saved_data["bias"] = bias;
    if (destinations.weight.defined()) ctx->saved_data["weight_destination"] = destinations.weight;
    if (destinations.bias.defined()) ctx->saved_data["bias_destination"] = destinations.bias;
    return at::linear(input, weight, bias);  // addmm inside; the operation counter (operation_costs) knows linear
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& input = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor grad = grad_outputs[0].contiguous();
    at::Tensor grad_input, grad_weight, grad_bias;
    if (ctx->needs_input_grad(0)) grad_input = grad.mm(weight);
    if (ctx->needs_input_grad(1)) {
      if (writes_directly(ctx, "weight", "weight_destination")) {
        at::Tensor destination = ctx->saved_data["weight_destination"].toTensor();
        at::mm_out(destination, grad.t(), input);
        grad_weight = destination.alias();  // a new reference: autograd adopts it without a copy
      } else {
        grad_weight = grad.t().mm(input);
      }
    }
    if (ctx->needs_input_grad(2)) {
      if (writes_directly(ctx, "bias", "bias_destination")) {
        at::Tensor destination = ctx->saved_data["bias_destination"].toTensor();
        at::sum_out(destination, grad, {0});
        grad_bias = destination.alias();
      } else {
        grad_bias = grad.sum(0);
      }
    }
    return {grad_input, grad_weight, grad_bias, at::Tensor()};
  }
};

}  // namespace

DirectLinearImpl::DirectLinearImpl(int64_t inputs, int64_t outputs) {
  // torch::nn::LinearImpl's registration and reset_parameters, draw for draw.
  weight = register_parameter("weight", torch::empty({outputs, inputs}));
  bias = register_parameter("bias", torch::empty(outputs));
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5));
  const auto [fan_in, fan_out] = torch::nn::init::_calculate_fan_in_and_fan_out(weight);
  const double bound = 1 / std::sqrt(static_cast<double>(fan_in));
  torch::nn::init::uniform_(bias, -bound, bound);
}

at::Tensor DirectLinearImpl::forward(const at::Tensor& input) {
  require(input.dim() == 2 && input.size(1) == weight.size(1),
          "DirectLinear: expected input [B, " + std::to_string(weight.size(1)) + "], got a tensor of " +
              std::to_string(input.dim()) + " dimensions" +
              (input.dim() == 2 ? " and " + std::to_string(input.size(1)) + " columns" : ""));
  return DirectLinearFunction::apply(input, weight, bias, Destinations{weight_destination_, bias_destination_});
}

void DirectLinearImpl::set_gradient_destinations(at::Tensor weight_destination, at::Tensor bias_destination) {
  require(!weight_destination.defined() || weight_destination.sizes() == weight.sizes(),
          "DirectLinear: the weight's gradient destination has the wrong shape");
  require(!bias_destination.defined() || bias_destination.sizes() == bias.sizes(),
          "DirectLinear: the bias's gradient destination has the wrong shape");
  weight_destination_ = std::move(weight_destination);
  bias_destination_ = std::move(bias_destination);
}

}  // namespace distsgd::models
