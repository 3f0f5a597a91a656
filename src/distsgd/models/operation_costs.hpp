// Counts the FLOPs and bytes of every operation of a model's forward pass, from the model definition itself: one
// forward at batch 1 on the real module, each operation it dispatches seen with its input and output shapes
// (libtorch's RecordFunction), costed by the rules in operation_costs.cpp, and charged to the parameter tensors in
// forward order. The simulator turns these counts into times on a device (sim/platform/analytical_profile.hpp; cli
// copies them into its plain ModelCost, as this layer cannot see sim).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "distsgd/models/model.hpp"

namespace distsgd::models {

// One operation, or the share of one that falls to a tensor. Per sample: linear in the batch size.
struct CountedOperation {
  std::string op;                    // e.g. "aten::conv2d"
  double flops_per_sample = 0;       // a multiply-add is 2 FLOPs
  double bytes_per_sample = 0;       // activations read and written, 4 bytes per element
  double fixed_bytes = 0;            // parameters and buffers read
  bool has_parameters = false;       // reads a parameter: backward computes a weight gradient
  bool input_needs_gradient = true;  // some activation input requires a gradient (false on the input batch)
  double share = 1;                  // the part of the operation this is (shared among the tensors it reads)
};

struct CountedTensor {
  std::string name;
  int64_t parameters = 0;
  std::vector<CountedOperation> operations;  // forward order
};

struct CountedModel {
  std::string model;
  std::vector<int64_t> input_shape;      // C, H, W
  std::vector<CountedTensor> tensors;    // as Model::parameters()
  std::vector<std::string> generic_ops;  // operations costed by the generic elementwise rule (no rule of their own)

  // Multiply-adds of the forward pass per sample in convolutions and matrix products (the figure papers quote).
  double multiply_adds_per_sample = 0;
};

// Runs one forward of `model` at batch 1 on zeros of `input`'s shape (in eval mode: batch norm cannot take training
// statistics of one sample's 1x1 maps; the model is left in training mode; no backward is run) and counts it, with
// the training-mode cost rules whatever the mode. Throws Error when the build cannot observe operator inputs (libtorch
// asserts on it in builds without NDEBUG) or when an operation reads a parameter the model does not list.
CountedModel count_operations(Model& model, const InputSpec& input);

}  // namespace distsgd::models
