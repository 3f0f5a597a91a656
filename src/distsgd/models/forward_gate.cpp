#include "distsgd/models/forward_gate.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace distsgd::models {

void BlockGate::install(ForwardGate gate, const std::vector<at::Tensor>& parameters) {
  gate_ = std::move(gate);
  index_of_.clear();
  ranges_.clear();
  if (!gate_) return;
  // TensorImpl identity survives FlatParameters' set_data (it swaps the storage, not the tensor).
  for (size_t i = 0; i < parameters.size(); ++i) {
    index_of_[parameters[i].unsafeGetTensorImpl()] = static_cast<int64_t>(i);
  }
}

std::pair<int64_t, int64_t> BlockGate::range_of(const torch::nn::Module& block) {
  auto cached = ranges_.find(&block);
  if (cached != ranges_.end()) return cached->second;
  const auto parameters = block.parameters(/*recurse=*/true);
  int64_t first = std::numeric_limits<int64_t>::max(), last = -1;
  for (const auto& parameter : parameters) {
    auto found = index_of_.find(parameter.unsafeGetTensorImpl());
    if (found == index_of_.end()) throw std::logic_error("forward gate: " + block.name() + " is not part of the model");
    first = std::min(first, found->second);
    last = std::max(last, found->second);
  }
  std::pair<int64_t, int64_t> range{0, 0};
  if (!parameters.empty()) {
    // One range per block: its parameters must be registered together.
    if (last + 1 - first != static_cast<int64_t>(parameters.size())) {
      throw std::logic_error("forward gate: parameters of " + block.name() + " are not contiguous in the model");
    }
    range = {first, last + 1};
  }
  return ranges_[&block] = range;
}

void BlockGate::operator()(const torch::nn::Module& block) {
  if (!gate_) return;
  const auto [first, end] = range_of(block);
  if (first < end) gate_(first, end);
}

at::Tensor BlockGate::forward_each(torch::nn::Sequential& sequential, at::Tensor input) {
  for (auto& module : *sequential) {
    (*this)(*module.ptr());
    input = module.forward(std::move(input));
  }
  return input;
}

}  // namespace distsgd::models
