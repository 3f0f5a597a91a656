// ALADDIN's server rule for one shard (Ko et al., CIKM 2021; spec: "ALADDIN"): every gradient is accumulated
// into g_acc with a count c (since the last global update) and a count c_i per worker. When worker i's count
// reaches pi (after accumulating the triggering gradient), x~ <- x~ - eta * g_acc / c (the "lazy" averaged
// update, taken by the server's optimizer: plain SGD, or momentum SGD with --momentum-at server|both), g_acc, c
// and c_i are reset, and worker i receives (x~, alpha).
#pragma once
#include "distsgd/algo/algorithm_state.hpp"
#include "distsgd/core/enum_names.hpp"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace distsgd::optim {
class MomentumSgd;
}

namespace distsgd::algo::ps {

// The mixing weight a worker receives with x~: 1 - 1/sqrt(n*pi) (kText, the paper's) or 1 - 1/sqrt(c) (kCount,
// c the gradients averaged), clamped to [0, 1].
enum class AlphaRule { kText, kCount };
const EnumNames<AlphaRule>& enum_names(AlphaRule);
double aladdin_alpha(AlphaRule rule, int64_t workers, int64_t pi, int64_t accumulated);

class LazyAverager {
 public:
  LazyAverager(int64_t numel, int64_t workers, int64_t pi);

  // Accumulates worker's gradient; on a trigger applies the averaged gradient to x_tilde with `optimizer` and
  // returns the number of gradients it averaged; otherwise returns 0.
  int64_t add(int64_t worker, const at::Tensor& gradient, at::Tensor& x_tilde, double lr,
              optim::MomentumSgd& optimizer);

  int64_t accumulated() const { return count_; }
  // Checkpoints: the gradients accumulated towards the next update and the counts.
  void save_state(AlgorithmState& state) const;
  void load_state(const AlgorithmState& state);

 private:
  at::Tensor sum_;
  int64_t count_ = 0;
  std::vector<int64_t> per_worker_;
  int64_t pi_;
};

}  // namespace distsgd::algo::ps
