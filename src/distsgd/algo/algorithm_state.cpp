#include "distsgd/algo/algorithm_state.hpp"

#include "distsgd/core/error.hpp"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/tensor.h>

#include <algorithm>

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

void AlgorithmState::put_integers(const std::string& name, const std::vector<int64_t>& values) {
  tensors_[name] = at::tensor(values, at::kLong);
}

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

void AlgorithmState::copy_integers_to(const std::string& name, std::vector<int64_t>& into) const {
  const at::Tensor saved = tensor(name).to(at::kLong).contiguous();
  require(saved.numel() == static_cast<int64_t>(into.size()),
          "the checkpoint's '" + name + "' has " + std::to_string(saved.numel()) + " elements, this run's " +
              std::to_string(into.size()));
  std::copy(saved.data_ptr<int64_t>(), saved.data_ptr<int64_t>() + saved.numel(), into.begin());
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
