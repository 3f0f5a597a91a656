// The forward gate of the registry's C++ models (see Model::set_forward_gate). Each model's module holds a
// BlockGate and calls it with a block right before running that block; the BlockGate turns the block into its
// range of parameter indices (found by tensor identity against the model's parameters), so model code names
// blocks, never indices.
#pragma once
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "distsgd/models/model.hpp"

namespace distsgd::models {

class BlockGate {
 public:
  // `parameters` is Model::parameters() of the model this gate belongs to. An empty gate uninstalls.
  void install(ForwardGate gate, const std::vector<at::Tensor>& parameters);

  // Opens the gate for block's parameters; nothing when no gate is installed or the block has no parameters.
  void operator()(const torch::nn::Module& block);

  // Sequential::forward, opening the gate before each of its modules.
  at::Tensor forward_each(torch::nn::Sequential& sequential, at::Tensor input);

 private:
  std::pair<int64_t, int64_t> range_of(const torch::nn::Module& block);

  ForwardGate gate_;
  std::unordered_map<const c10::TensorImpl*, int64_t> index_of_;
  std::unordered_map<const torch::nn::Module*, std::pair<int64_t, int64_t>> ranges_;  // computed on first use
};

}  // namespace distsgd::models
