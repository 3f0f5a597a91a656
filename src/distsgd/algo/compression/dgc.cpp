#include "distsgd/algo/compression/dgc.hpp"

#include "distsgd/algo/compression/compression_options.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/optim/float_buffer.hpp"
#include "distsgd/optim/kernels.hpp"

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace distsgd::algo::compression {

DgcOptions dgc_options(const TrainConfig& c, int64_t steps_per_epoch) {
  DgcOptions o;
  o.density = kDensity.of(c);
  o.momentum = c.momentum;
  o.weight_decay = c.weight_decay;
  o.clip_norm = kDgcClipNorm.of(c);
  o.workers = c.workers;
  o.warmup_epochs = kDgcWarmupEpochs.of(c);
  o.steps_per_epoch = steps_per_epoch;
  return o;
}

double dgc_density(double target, double epoch, double warmup_epochs) {
  // Lin et al. §4: sparsity 75%, 93.75%, 98.4375%, 99.6%, one stage per epoch of ImageNet's first four.
  static constexpr double kWarmup[] = {0.25, 0.0625, 0.015625, 0.004};
  if (warmup_epochs <= 0 || epoch >= warmup_epochs) return target;
  const auto stage = static_cast<size_t>(std::max(0.0, epoch) * 4.0 / warmup_epochs);
  return std::max(target, kWarmup[std::min<size_t>(stage, 3)]);
}

int64_t dgc_entries(int64_t numel, double density) {
  const auto k = static_cast<int64_t>(std::ceil(density * static_cast<double>(numel) - 1e-9));
  return std::clamp<int64_t>(k, 1, numel);
}

int64_t SparseGradient::size() const { return indices.defined() ? indices.numel() : 0; }

DgcCompressor::DgcCompressor(const std::vector<optim::ParameterSlot>& slots, DgcOptions options)
    : slots_(slots), options_(options) {
  int64_t numel = 0;
  for (const auto& s : slots_) numel = std::max(numel, s.offset + s.numel);
  // Indices travel as int32 (pack()).
  require(numel <= std::numeric_limits<int32_t>::max(),
          "--compress dgc: models above 2^31 parameters are not supported");
  momentum_ = at::zeros({numel});
  residual_ = at::zeros({numel});
}

double DgcCompressor::density_at(int64_t step) const {
  const double epoch = static_cast<double>(step) / static_cast<double>(options_.steps_per_epoch);
  return dgc_density(options_.density, epoch, options_.warmup_epochs);
}

SparseGradient DgcCompressor::compress(const at::Tensor& gradient, const at::Tensor& parameters, double density) {
  const int64_t numel = momentum_.numel();
  require(gradient.numel() == numel && parameters.numel() == numel,
          "--compress dgc: the gradient or the parameters do not match the compressor's size");
  const float* g = optim::floats(gradient);
  const float* p = optim::floats(parameters);
  float* u = optim::floats(momentum_);
  float* v = optim::floats(residual_);
  const auto n = static_cast<size_t>(numel);
  double clip = 1;
  if (options_.clip_norm > 0) {
    const double threshold = options_.clip_norm / std::sqrt(static_cast<double>(options_.workers));
    const double norm = std::sqrt(optim::kernels::dgc_decayed_norm_squared(g, p, n, options_.weight_decay));
    if (norm > threshold) clip = threshold / norm;
  }
  // One pass: u = mu*u + clip*(g + wd*x); v += u (the ATen chain's operations, in its order).
  optim::kernels::dgc_accumulate(u, v, g, p, n, options_.momentum, options_.weight_decay, clip);

  int64_t total = 0;
  for (const auto& slot : slots_) total += dgc_entries(slot.numel, density);
  auto indices = at::empty({total}, at::kLong);
  auto values = at::empty({total}, at::kFloat);
  int64_t* index = indices.data_ptr<int64_t>();
  float* value = values.data_ptr<float>();
  for (const auto& slot : slots_) {
    const int64_t k = dgc_entries(slot.numel, density);
    // The exact top k by magnitude, found from a sampled threshold and one pass (no sort of the tensor).
    optim::kernels::top_magnitudes(v + slot.offset, static_cast<size_t>(slot.numel), static_cast<size_t>(k), index);
    for (int64_t j = 0; j < k; ++j) {
      const int64_t i = index[j] + slot.offset;
      index[j] = i;
      value[j] = v[i];
      v[i] = 0;  // factor masking: the sent entries stop carrying momentum
      u[i] = 0;
    }
    index += k;
    value += k;
  }
  return {indices, values};
}

at::Tensor pack(const SparseGradient& sparse) {
  const int64_t k = sparse.size();
  auto packed = at::empty({2 * k});
  if (k == 0) return packed;
  packed.narrow(0, 0, k).copy_(sparse.values);
  packed.narrow(0, k, k).view(at::kInt).copy_(sparse.indices);
  return packed;
}

SparseGradient unpack(const at::Tensor& packed) {
  require(packed.numel() % 2 == 0, "a sparse gradient message has an odd number of elements");
  const int64_t k = packed.numel() / 2;
  return {packed.narrow(0, k, k).view(at::kInt).to(at::kLong), packed.narrow(0, 0, k)};
}

void add_sparse(at::Tensor& dense, const SparseGradient& sparse, int64_t offset) {
  if (sparse.size() == 0) return;
  auto local = offset == 0 ? sparse.indices : sparse.indices - offset;
  require(local.min().item<int64_t>() >= 0 && local.max().item<int64_t>() < dense.numel(),
          "a sparse gradient names an entry outside the receiving range");
  dense.index_add_(0, local, sparse.values);
}

void DgcCompressor::save_state(AlgorithmState& state) const {
  state.put("dgc_momentum", momentum_);
  state.put("dgc_residual", residual_);
}

void DgcCompressor::load_state(const AlgorithmState& state) {
  state.copy_to("dgc_momentum", momentum_);
  state.copy_to("dgc_residual", residual_);
}

}  // namespace distsgd::algo::compression
