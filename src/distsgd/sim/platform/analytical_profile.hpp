// Analytical model profiles for hardware at hand or not (Paleo: Qi, Sparks and Talwalkar, ICLR 2017): each
// operation of a model's forward pass costs t = max(FLOPs / (peak * eff), bytes / (bandwidth * eff)) on a device
// (sim/platform/device_description.hpp), its backward pass a rule below, the update a number of passes over the
// parameters. The operations' FLOPs and bytes come from the model definition (models/operation_costs.hpp counts them;
// cli passes them here as a ModelCost: this layer stays free of torch).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "distsgd/sim/platform/device_description.hpp"
#include "distsgd/sim/platform/model_profile.hpp"

namespace distsgd::sim {

// One operation of the forward pass (a convolution, a matrix product, a normalization, an activation, a pooling),
// or the share of one that falls to a parameter tensor. Costs are linear in the batch size B:
// FLOPs = B * flops_per_sample, bytes = B * bytes_per_sample + fixed_bytes.
struct OperationCost {
  std::string op;                    // the framework's name for it, e.g. "aten::conv2d"
  double flops_per_sample = 0;       // a multiply-add is 2 FLOPs
  double bytes_per_sample = 0;       // activations read and written
  double fixed_bytes = 0;            // parameters and buffers read, once per batch
  bool has_parameters = false;       // backward computes a weight gradient
  bool input_needs_gradient = true;  // false where the input is the batch itself (the first layer)
  double share = 1;                  // the part of the operation this is: its kernel floor is shared the same way
};

// A parameter tensor and the operations charged to it, in forward order: the operations that read it (shared by
// parameter count among the tensors one operation reads) and the parameter-free ones that follow until the next
// operation with parameters.
struct TensorCost {
  std::string name;
  int64_t parameters = 0;
  std::vector<OperationCost> operations;
  std::vector<int64_t> shape{};  // the parameter's sizes
};

struct ModelCost {
  std::string model;
  std::vector<int64_t> input_shape;  // one sample: C, H, W
  int64_t bytes_per_input_element = 4;
  std::vector<TensorCost> tensors;       // forward order, as the model's parameters
  std::vector<std::string> generic_ops;  // operations the counter had no rule for (costed as elementwise)

  double input_bytes_per_sample() const;
  double forward_flops_per_sample() const;
};

// Momentum SGD with weight decay as PyTorch 1.x's torch.optim.SGD runs it, one tensor operation at a time:
// d_p += wd * p (3 passes over the parameters), buf = m * buf + d_p (mul_ then add_: 5), p -= lr * buf (3).
constexpr double kUpdatePassesPerGradientByte = 11;

// Paleo's roofline: the slower of computing and moving the data, each at the device's efficiency.
double device_seconds(double flops, double bytes, const DeviceDescription& device);
// An operation's forward: its roofline time, at least the device's kernel_seconds times the operation's share (Paleo
// has no such floor; small models on fast devices need it).
double forward_seconds(const OperationCost& op, int64_t batch_size, const DeviceDescription& device);
// The backward rule: one forward-sized pass (the forward's FLOPs and bytes) per gradient the operation computes:
// one for its input when the input needs a gradient, one for its weights when it has any. So a convolution, a matrix
// product or a batch norm costs 2x its forward (1x as the first layer, whose input gradient nobody needs), an
// activation or a pooling 1x (Paleo's "the backward pass of a layer costs about what its forward does" per
// gradient; the common "backward = 2 x forward" for the layers with weights).
double backward_seconds(const OperationCost& op, int64_t batch_size, const DeviceDescription& device);

// The profile the simulator reads: per tensor its forward and backward seconds at `batch_size`; the update from the
// memory bandwidth; the input's copy over the host link (hidden by prefetching, as the loader overlaps it); data
// time `data_seconds` (0: read ahead).
ModelProfile analytical_profile(const ModelCost& cost, const DeviceDescription& device, int64_t batch_size,
                                double data_seconds = 0);

// Forward + backward + update on one device alone (what a published single-device throughput measures).
double analytical_iteration_seconds(const ModelCost& cost, const DeviceDescription& device, int64_t batch_size);

// The efficiency at which `cost` at `batch_size` runs at `samples_per_second` on `device`: every term of the
// iteration above the kernel floor scales with 1/eff, so the time falls as eff rises and a bisection finds it (with
// no floor: eff = iteration time at eff 1 / published time). Throws Error when the published figure is faster than
// the device's roofline allows (eff > 1).
double calibrated_efficiency(const ModelCost& cost, DeviceDescription device, int64_t batch_size,
                             double samples_per_second);

// The costs behind a profile, for the profile JSON: per tensor its forward and backward FLOPs and bytes at the batch.
nlohmann::json cost_json(const ModelCost& cost, int64_t batch_size);

}  // namespace distsgd::sim
