#include "distsgd/algo/ps/lazy_averager.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/optim/float_buffer.hpp"
#include "distsgd/optim/kernels.hpp"
#include "distsgd/optim/sgd.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cmath>

namespace distsgd::algo::ps {

const EnumNames<AlphaRule>& enum_names(AlphaRule) {
  static const EnumNames<AlphaRule> names{{AlphaRule::kText, "text"}, {AlphaRule::kCount, "count"}};
  return names;
}

double aladdin_alpha(AlphaRule rule, int64_t workers, int64_t pi, int64_t accumulated) {
  const double denominator =
      rule == AlphaRule::kCount ? static_cast<double>(accumulated) : static_cast<double>(workers * pi);
  if (denominator <= 0) return 0;
  return std::clamp(1.0 - 1.0 / std::sqrt(denominator), 0.0, 1.0);
}

LazyAverager::LazyAverager(int64_t numel, int64_t workers, int64_t pi)
    : sum_(at::zeros({numel})), per_worker_(static_cast<size_t>(workers), 0), pi_(pi) {}

int64_t LazyAverager::add(int64_t worker, const at::Tensor& gradient, at::Tensor& x_tilde, double lr,
                          optim::MomentumSgd& optimizer) {
  at::NoGradGuard no_grad;
  require(gradient.numel() == sum_.numel(), "ALADDIN: a gradient of another size than the shard");
  optim::kernels::accumulate(optim::floats(sum_), optim::floats(gradient), optim::length(sum_));
  ++count_;
  if (++per_worker_[worker] < pi_) return 0;
  const int64_t averaged = count_;
  // One pass: average, step, and reset the sum for the next round.
  optim::StepOptions options{static_cast<double>(averaged), optim::kernels::GradsAfter::kZero};
  optimizer.step(x_tilde, sum_, lr, 0, options);
  count_ = 0;
  per_worker_[worker] = 0;
  return averaged;
}

void LazyAverager::save_state(AlgorithmState& state) const {
  state.put("averager_sum", sum_);
  state.put_integer("averager_count", count_);
  state.put_integers("averager_per_worker", per_worker_);
}

void LazyAverager::load_state(const AlgorithmState& state) {
  state.copy_to("averager_sum", sum_);
  count_ = state.integer("averager_count");
  state.copy_integers_to("averager_per_worker", per_worker_);
}

}  // namespace distsgd::algo::ps
