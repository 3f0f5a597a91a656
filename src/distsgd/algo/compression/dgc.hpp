// Deep Gradient Compression (Lin et al., "Deep Gradient Compression: Reducing the Communication Bandwidth for
// Distributed Training", ICLR 2018; spec: "Optimization techniques" 3). Per worker and per tensor:
//   g <- clip(grad + wd*x)              local clipping: threshold clip_norm / sqrt(workers) (Lin et al. §3.2)
//   u <- mu*u + g;  v <- v + u          momentum correction: accumulate the momentum direction, not the gradient
//   send the k largest |v| of each tensor (indices + values), k = ceil(density * numel), at least 1
//   v[sent] <- 0;  u[sent] <- 0         factor masking: sent entries stop carrying stale momentum
// The receiver adds what arrives and applies plain SGD (x <- x - lr * mean), since momentum and weight decay
// already happened here. k per tensor is a function of the density alone, so message sizes are known in advance.
#pragma once
#include "distsgd/algo/algorithm_state.hpp"
#include "distsgd/core/config.hpp"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace distsgd::optim {
struct ParameterSlot;
}

namespace distsgd::algo::compression {

struct DgcOptions {
  double density = 0.001;  // fraction of each tensor sent per step after the warm-up
  double momentum = 0.9;
  double weight_decay = 1e-4;
  double clip_norm = 0;  // global gradient-norm threshold before the 1/sqrt(workers) scaling; 0: no clipping
  int64_t workers = 1;
  double warmup_epochs = 4;     // the warm-up densities 25%, 6.25%, 1.5625%, 0.4% share this span equally
  int64_t steps_per_epoch = 1;  // iterations of a worker per epoch: where a step falls in the warm-up
};

// The options of a run (--density, --momentum, --weight-decay, --dgc-clip-norm, --workers, --dgc-warmup-epochs).
DgcOptions dgc_options(const TrainConfig& config, int64_t steps_per_epoch);

// The density at a point of training (in epochs): Lin et al.'s exponential warm-up (sparsity 75%, 93.75%,
// 98.4375%, 99.6%, then the target), never below the target.
double dgc_density(double target, double epoch, double warmup_epochs);

// Entries of a tensor of `numel` values sent at `density`.
int64_t dgc_entries(int64_t numel, double density);

// Selected entries of the flat gradient: indices into the flat vector, ascending; values in the same order.
struct SparseGradient {
  at::Tensor indices;  // int64
  at::Tensor values;   // float32
  int64_t size() const;
};

class DgcCompressor {
 public:
  DgcCompressor(const std::vector<optim::ParameterSlot>& slots, DgcOptions options);

  // Folds this step's gradient into the accumulators and takes out the entries to send.
  SparseGradient compress(const at::Tensor& gradient, const at::Tensor& parameters, double density);
  // The density of a worker's iteration `step` under the options' warm-up.
  double density_at(int64_t step) const;

  // Accumulators over the flat vector (tests, checkpoints): u (momentum) and v (what is still to be sent).
  const at::Tensor& momentum() const { return momentum_; }
  const at::Tensor& residual() const { return residual_; }
  const DgcOptions& options() const { return options_; }
  // Checkpoints: u and v as "dgc_momentum" and "dgc_residual".
  void save_state(AlgorithmState& state) const;
  void load_state(const AlgorithmState& state);

 private:
  std::vector<optim::ParameterSlot> slots_;
  DgcOptions options_;
  at::Tensor momentum_, residual_;
};

// The wire format: one float32 message [values | indices as int32 bit patterns] of 2 * size() elements.
at::Tensor pack(const SparseGradient& sparse);
SparseGradient unpack(const at::Tensor& packed);
// dense[i - offset] += value for every entry (offset: where `dense` starts in the flat vector).
void add_sparse(at::Tensor& dense, const SparseGradient& sparse, int64_t offset = 0);

}  // namespace distsgd::algo::compression
