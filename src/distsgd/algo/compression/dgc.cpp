#include "distsgd/algo/compression/dgc.hpp"

#include "distsgd/algo/compression/compression_options.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/optim/flat_parameters.hpp"

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/cat.h>
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
  at::NoGradGuard no_grad;
  auto g = gradient.add(parameters, options_.weight_decay);
  if (options_.clip_norm > 0) {
    const double threshold = options_.clip_norm / std::sqrt(static_cast<double>(options_.workers));
    const double norm = g.norm().item<double>();
    if (norm > threshold) g.mul_(threshold / norm);
  }
  momentum_.mul_(options_.momentum).add_(g);
  residual_.add_(momentum_);

  std::vector<at::Tensor> indices, values;
  for (const auto& slot : slots_) {
    auto v = residual_.narrow(0, slot.offset, slot.numel);
    auto u = momentum_.narrow(0, slot.offset, slot.numel);
    const int64_t k = dgc_entries(slot.numel, density);
    auto local = std::get<0>(std::get<1>(v.abs().topk(k, 0, /*largest=*/true, /*sorted=*/false)).sort());
    values.push_back(v.index_select(0, local));
    indices.push_back(local + slot.offset);
    v.index_fill_(0, local, 0);
    u.index_fill_(0, local, 0);
  }
  return {at::cat(indices), at::cat(values)};
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

}  // namespace distsgd::algo::compression
