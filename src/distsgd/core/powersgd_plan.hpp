// Which tensors of a gradient PowerSGD compresses, at which rank, and what it then sends (Vogels, Karimireddy and
// Jaggi, "PowerSGD: Practical Low-Rank Gradient Compression for Distributed Optimization", NeurIPS 2019), decided
// as PyTorch 1.13's powerSGD_hook decides it. Torch-free, so that the compressor (algo/compression/powersgd.hpp) and
// the simulator's models (sim/) count the same floats.
//   - a tensor of 2+ dimensions is a matrix [shape[0], prod(rest)] of n rows and m columns; its rank is
//     min(n, m, the rank asked for) (the hook clamps, it does not refuse);
//   - it is compressed when (n + m) r * min_compression_rate < n m (the hook's _should_compress); with a rate of
//     1 or more a clamped tensor never is, since (n + m) min(n, m) >= n m;
//   - vectors and scalars are never compressed (the spec's rule; the hook would compress a vector only at a rate
//     below 1/2);
//   - compressed tensors are grouped by matrix shape, shapes in order of first appearance (the hook's
//     shape_to_tensors): that order lays out the P and Q buffers and draws the first random Qs.
#pragma once
#include <cstdint>
#include <vector>

namespace distsgd {

struct LowRankTensor {
  int64_t index = 0;  // into the shapes the plan was made from
  int64_t rows = 0, cols = 0;
  int64_t rank = 0;
};

struct PowerSgdPlan {
  std::vector<LowRankTensor> compressed;  // the hook's order (see above)
  std::vector<int64_t> uncompressed;      // indices, in the given order
  int64_t p_floats = 0;                   // sum of n r: the first allreduce
  int64_t q_floats = 0;                   // sum of m r: the second
  int64_t uncompressed_floats = 0;        // allreduced as they are
  int64_t total_floats = 0;               // the whole gradient

  // Floats one worker puts into the step's allreduces (P, Q and the uncompressed tensors).
  int64_t floats_allreduced() const { return p_floats + q_floats + uncompressed_floats; }
  // The three products of each compressed tensor (P = M Q, Q = M^T P, the approximation P Q^T), 2 n m r each.
  double matmul_flops() const;
};

// shapes: each tensor's sizes, in the flat gradient's order. rank >= 1.
PowerSgdPlan plan_powersgd(const std::vector<std::vector<int64_t>>& shapes, int64_t rank, double min_compression_rate);

// The largest rank at which some tensor is still compressed (0: none is at any rank).
int64_t largest_compressing_rank(const std::vector<std::vector<int64_t>>& shapes, double min_compression_rate);

}  // namespace distsgd
