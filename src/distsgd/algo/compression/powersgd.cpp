#include "distsgd/algo/compression/powersgd.hpp"

#include "distsgd/algo/compression/compression_options.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/models/model.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linalg_qr.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/zeros.h>

#include <numeric>

namespace distsgd::algo::compression {
namespace {

int64_t numel_of(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

// numpy's legacy RandomState.randint(high) for high <= 2^32: masked rejection on 32-bit draws.
int64_t numpy_randint(std::mt19937& generator, uint32_t high) {
  const uint32_t largest = high - 1;
  uint32_t mask = largest;
  for (int shift = 1; shift <= 16; shift *= 2) mask |= mask >> shift;
  uint32_t value;
  do {
    value = static_cast<uint32_t>(generator()) & mask;
  } while (value > largest);
  return value;
}

// The hook's _orthogonalize_gram_schmidt (epsilon 0) on one [rows, r] matrix, in place, op for op.
void gram_schmidt(at::Tensor matrix) {
  const int64_t columns = matrix.size(1);
  for (int64_t i = 0; i < columns; ++i) {
    auto column = matrix.narrow(1, i, 1);
    auto norm = column.norm(2, {0}, /*keepdim=*/true);
    if (norm.item<float>() == 0) {
      column.zero_();  // the hook's intent for a vanished column (its division would give NaN)
    } else {
      column.div_(norm);
    }
    if (i + 1 < columns) {
      auto rest = matrix.narrow(1, i + 1, columns - i - 1);
      rest.sub_(at::sum(column * rest, {0}, /*keepdim=*/true) * column);
    }
  }
}

// The hook's _orthogonalize: Gram-Schmidt up to rank 2, Householder QR (torch.linalg.qr, reduced) above.
void orthonormalise(at::Tensor matrix) {
  if (matrix.size(1) <= 2) return gram_schmidt(matrix);
  matrix.copy_(std::get<0>(at::linalg_qr(matrix)));
}

}  // namespace

PowerSgdCompressor::PowerSgdCompressor(std::vector<std::vector<int64_t>> shapes, PowerSgdOptions options)
    : shapes_(std::move(shapes)),
      options_(options),
      plan_(plan_powersgd(shapes_, options.rank, options.min_compression_rate)),
      seeds_(static_cast<uint32_t>(options.seed)) {
  require(options.rank >= 1, "PowerSGD: the rank must be at least 1");
  int64_t offset = 0;
  for (const auto& shape : shapes_) {
    offsets_.push_back(offset);
    offset += numel_of(shape);
  }
}

void PowerSgdCompressor::allocate() {
  const auto floats = at::TensorOptions().dtype(at::kFloat);
  error_ = at::zeros({plan_.total_floats}, floats);
  p_ = at::zeros({plan_.p_floats}, floats);
  q_ = at::zeros({plan_.q_floats}, floats);
}

void PowerSgdCompressor::draw_first_qs() {
  // torch.manual_seed(rng.randint(1_000_000_000)) in a forked RNG, then torch.randn per Q in the plan's order.
  auto generator = at::detail::createCPUGenerator(static_cast<uint64_t>(numpy_randint(seeds_, 1000000000)));
  int64_t at = 0;
  for (const auto& t : plan_.compressed) {
    auto q = q_.narrow(0, at, t.cols * t.rank).view({t.cols, t.rank});
    q.copy_(at::randn({1, t.cols, t.rank}, generator, at::TensorOptions().dtype(at::kFloat)).view({t.cols, t.rank}));
    at += t.cols * t.rank;
  }
}

int64_t PowerSgdCompressor::allreduce_mean(at::Tensor& gradient, int64_t step, comm::Communicator* comm,
                                           const Wait& wait) {
  require(gradient.numel() == plan_.total_floats && gradient.is_contiguous() && gradient.scalar_type() == at::kFloat,
          "PowerSGD: the gradient does not match the compressor's tensors (" + std::to_string(gradient.numel()) +
              " floats, expected " + std::to_string(plan_.total_floats) + ")");
  at::NoGradGuard no_grad;
  const int64_t workers = comm ? comm->workers() : 1;
  const double ring_share = 2.0 * static_cast<double>(workers - 1) / static_cast<double>(workers);
  int64_t bytes = 0;
  // Sums `buffer` over the workers (nothing to do alone, or for an empty buffer).
  auto allreduce = [&](at::Tensor buffer, const std::string& what) {
    if (!comm || workers == 1 || buffer.numel() == 0) return;
    auto work = comm->allreduce_sum(buffer);
    bytes += static_cast<int64_t>(ring_share * 4.0 * static_cast<double>(buffer.numel()));
    if (wait) {
      wait(work, what);
    } else {
      work.wait();
    }
  };
  const double divisor = static_cast<double>(workers);

  if (!compressing_at(step)) {
    allreduce(gradient, "allreduce gradient");
    gradient.div_(divisor);
    return bytes;
  }
  const bool first = !error_.defined();
  if (first) allocate();
  gradient.add_(error_);  // M = g + e
  const at::Tensor sent = gradient.clone();

  auto matrix = [&](const LowRankTensor& t) {
    return gradient.narrow(0, offsets_[t.index], t.rows * t.cols).view({t.rows, t.cols});
  };
  std::vector<at::Tensor> ps, qs;
  int64_t p_at = 0, q_at = 0;
  for (const auto& t : plan_.compressed) {
    ps.push_back(p_.narrow(0, p_at, t.rows * t.rank).view({t.rows, t.rank}));
    qs.push_back(q_.narrow(0, q_at, t.cols * t.rank).view({t.cols, t.rank}));
    p_at += t.rows * t.rank;
    q_at += t.cols * t.rank;
  }

  // The uncompressed tensors in one message.
  at::Tensor uncompressed;
  if (!plan_.uncompressed.empty()) {
    std::vector<at::Tensor> parts;
    for (int64_t i : plan_.uncompressed) parts.push_back(gradient.narrow(0, offsets_[i], numel_of(shapes_[i])));
    uncompressed = at::cat(parts);
  }
  if (first) draw_first_qs();  // else warm start: the last step's Qs
  for (auto& q : qs) orthonormalise(q);
  for (size_t k = 0; k < ps.size(); ++k) at::mm_out(ps[k], matrix(plan_.compressed[k]), qs[k]);

  if (uncompressed.defined()) {
    allreduce(uncompressed, "allreduce uncompressed tensors");
    uncompressed.div_(divisor);
    int64_t at = 0;
    for (int64_t i : plan_.uncompressed) {
      const int64_t n = numel_of(shapes_[i]);
      gradient.narrow(0, offsets_[i], n).copy_(uncompressed.narrow(0, at, n));
      at += n;
    }
  }
  allreduce(p_, "allreduce P");  // not divided: orthonormalised next
  for (auto& p : ps) orthonormalise(p);
  for (size_t k = 0; k < qs.size(); ++k) at::mm_out(qs[k], matrix(plan_.compressed[k]).t(), ps[k]);
  allreduce(q_, "allreduce Q");
  q_.div_(divisor);
  for (size_t k = 0; k < ps.size(); ++k) {
    auto m = matrix(plan_.compressed[k]);
    at::mm_out(m, ps[k], qs[k].t());
  }
  at::sub_out(error_, sent, gradient);  // e = M - what this step delivered
  return bytes;
}

void PowerSgdCompressor::save_state(AlgorithmState& state) const {
  if (!error_.defined()) return;
  state.put("powersgd_error", error_);
  state.put("powersgd_p", p_);
  state.put("powersgd_q", q_);
}

void PowerSgdCompressor::load_state(const AlgorithmState& state) {
  if (!state.has("powersgd_q")) return;  // saved before compression started
  allocate();
  state.copy_to("powersgd_error", error_);
  state.copy_to("powersgd_p", p_);
  state.copy_to("powersgd_q", q_);
}

std::vector<std::vector<int64_t>> parameter_shapes(models::Model& model) {
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& p : model.parameters()) shapes.emplace_back(p.sizes().begin(), p.sizes().end());
  return shapes;
}

PowerSgdCompressor powersgd_compressor(models::Model& model, const TrainConfig& config) {
  PowerSgdCompressor compressor(parameter_shapes(model), powersgd_options(config));
  const auto& o = compressor.options();
  if (compressor.plan().compressed.empty()) {
    const int64_t largest = largest_compressing_rank(parameter_shapes(model), o.min_compression_rate);
    throw Error(
        "--rank " + std::to_string(o.rank) + " compresses no tensor of " + model.name() +
        ": PowerSGD sends a matrix of n x m gradients as (n + m) r floats only where that is below n m / 2 (the "
        "rank clamped to min(n, m), as powerSGD_hook does), " +
        (largest > 0 ? "which this model's largest matrices allow up to --rank " + std::to_string(largest)
                     : std::string("which no tensor of this model allows at any rank (use --compress none)")));
  }
  return compressor;
}

PowerSgdOptions powersgd_options(const TrainConfig& config) {
  PowerSgdOptions o;
  o.rank = kPowerSgdRank.of(config);
  o.start_step = kPowerSgdStart.of(config);
  o.seed = config.seed;
  return o;
}

}  // namespace distsgd::algo::compression
