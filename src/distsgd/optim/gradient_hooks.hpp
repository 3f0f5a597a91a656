// A callback per parameter that autograd runs once that parameter's gradient has been set (a post-hook on its
// gradient accumulator), removed when this object goes. Hooks run in the order they were installed, so the
// FlatParameters' hooks (made first) run before any algorithm's.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace distsgd::optim {

class GradientHooks {
 public:
  // `on_gradient(i)` for parameters[i]; parameters that do not require a gradient get no hook.
  GradientHooks(const std::vector<at::Tensor>& parameters, std::function<void(size_t)> on_gradient);
  ~GradientHooks();
  GradientHooks(const GradientHooks&) = delete;
  GradientHooks& operator=(const GradientHooks&) = delete;

 private:
  struct Installed;
  std::unique_ptr<Installed> installed_;
};

}  // namespace distsgd::optim
