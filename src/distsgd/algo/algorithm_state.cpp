#include "distsgd/algo/algorithm_state.hpp"

#include "distsgd/core/error.hpp"

#include <ATen/core/grad_mode.h>

namespace distsgd::algo {
namespace {

[[noreturn]] void missing(const std::string& name) {
  throw Error("the checkpoint holds no '" + name + "' (written by another algorithm or configuration)");
}

}  // namespace

void AlgorithmState::put(const std::string& name, const at::Tensor& value) {
  if (value.defined()) tensors_[name] = value.detach().clone();
}

void AlgorithmState::put_integer(const std::string& name, int64_t value) { integers_[name] = value; }

void AlgorithmState::put_real(const std::string& name, double value) { reals_[name] = value; }

bool AlgorithmState::has(const std::string& name) const {
  return tensors_.count(name) > 0 || integers_.count(name) > 0 || reals_.count(name) > 0;
}

const at::Tensor& AlgorithmState::tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) missing(name);
  return it->second;
}

void AlgorithmState::copy_to(const std::string& name, at::Tensor into) const {
  if (!into.defined()) return;
  const at::Tensor& saved = tensor(name);
  require(saved.numel() == into.numel(), "the checkpoint's '" + name + "' has " + std::to_string(saved.numel()) +
                                             " elements, this run's " + std::to_string(into.numel()));
  at::NoGradGuard no_grad;
  into.copy_(saved.view(into.sizes()));
}

int64_t AlgorithmState::integer(const std::string& name) const {
  auto it = integers_.find(name);
  if (it == integers_.end()) missing(name);
  return it->second;
}

double AlgorithmState::real(const std::string& name) const {
  auto it = reals_.find(name);
  if (it == reals_.end()) missing(name);
  return it->second;
}

}  // namespace distsgd::algo
