// PowerSGD (Vogels, Karimireddy and Jaggi, NeurIPS 2019; spec: "The low-communication family"), computed as PyTorch
// 1.13's DDP communication hook torch/distributed/algorithms/ddp_comm_hooks/powerSGD_hook.py computes it, so that
// the same tensors and seed give the hook's values (tests/powersgd_test.cpp against tests/fixtures/). One step of a
// worker, over its flat gradient g with error-feedback memory e:
//   M = g + e (every tensor); keep a copy of M
//   uncompressed tensors (vectors, small matrices: core/powersgd_plan.hpp): allreduce, divide by the workers
//   each compressed tensor, as a matrix [n, m]: orthonormalise Q (drawn at random the first time, else the last
//     step's: warm start), P = M Q; allreduce every P at once; orthonormalise P; Q = M^T P; allreduce every Q at
//     once, divide by the workers; M <- P Q^T
//   e = copy - M (so for an uncompressed tensor e is this worker's departure from the mean, which sums to zero
//     over the workers: the hook's memory, kept as it is)
// Before step `start_step` the whole gradient is allreduced plainly and e stays empty (the hook's
// start_powerSGD_iter). Orthonormalisation is the hook's: Gram-Schmidt up to rank 2, torch.linalg.qr above; a zero
// column becomes zeros (the hook, without an epsilon, would make it NaN). The first Qs come from torch.randn on a
// CPU generator seeded with numpy's RandomState(seed).randint(10^9), as the hook seeds it, in the plan's order.
// Reusable wherever a flat gradient is averaged by allreduce (AR-SGD's, an outer optimizer's pseudo-gradient).
#pragma once
#include "distsgd/algo/algorithm_state.hpp"
#include "distsgd/core/config.hpp"
#include "distsgd/core/powersgd_plan.hpp"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace distsgd::models {
class Model;
}

namespace distsgd::comm {
class Communicator;
class Work;
}  // namespace distsgd::comm

namespace distsgd::algo::compression {

struct PowerSgdOptions {
  int64_t rank = 2;                 // r, clamped per tensor to min(n, m) as the hook does
  int64_t start_step = 10;          // steps before this one are plain allreduces
  double min_compression_rate = 2;  // the hook's: compress when (n + m) r * rate < n m
  uint64_t seed = 0;                // the hook's random_seed: the same on every worker
};

class PowerSgdCompressor {
 public:
  // shapes: each tensor of the flat gradient, in its order (the flat gradient is their concatenation).
  PowerSgdCompressor(std::vector<std::vector<int64_t>> shapes, PowerSgdOptions options);

  // Waits for a collective; the caller's, to time and trace it ("what" names it). Default: work.wait().
  using Wait = std::function<void(comm::Work& work, const std::string& what)>;
  // Replaces `gradient` (this worker's, flat, float32, contiguous) with the workers' mean: exact before
  // start_step, PowerSGD's approximation from then on. comm null: one worker (nothing is sent). `step` counts the
  // caller's exchanges from 0 and must be the same on every worker. Returns the bytes this worker sent (a ring
  // allreduce of k floats sends 2 (W - 1) / W * 4k).
  int64_t allreduce_mean(at::Tensor& gradient, int64_t step, comm::Communicator* comm, const Wait& wait = {});

  bool compressing_at(int64_t step) const { return step >= options_.start_step; }
  const PowerSgdPlan& plan() const { return plan_; }
  const PowerSgdOptions& options() const { return options_; }
  // State after the last compressed step (tests, checkpoints): e over the flat vector, and the P and Q buffers in
  // the plan's order (each tensor's n x r, then m x r, row-major). Undefined before the first compressed step.
  const at::Tensor& error() const { return error_; }
  const at::Tensor& p() const { return p_; }
  const at::Tensor& q() const { return q_; }

  // Checkpoints: "powersgd_error", "powersgd_p", "powersgd_q" once compression has started.
  void save_state(AlgorithmState& state) const;
  void load_state(const AlgorithmState& state);

 private:
  void allocate();
  void draw_first_qs();

  std::vector<std::vector<int64_t>> shapes_;
  std::vector<int64_t> offsets_;  // of each tensor in the flat gradient
  PowerSgdOptions options_;
  PowerSgdPlan plan_;
  std::mt19937 seeds_;        // numpy's RandomState(seed) is this generator, seeded the same way
  at::Tensor error_, p_, q_;  // undefined until the first compressed step
};

// The --rank, --powersgd-start and --seed of a run.
PowerSgdOptions powersgd_options(const TrainConfig& config);

// The shapes of a model's parameters, in the flat buffer's order: what the compressor is made from.
std::vector<std::vector<int64_t>> parameter_shapes(models::Model& model);

// The compressor of a run's model gradients (or pseudo-gradients) under its flags. Throws distsgd::Error, naming the
// largest rank that would compress something, when --rank compresses no tensor of the model (PowerSGD would then be
// a plain allreduce under another name).
PowerSgdCompressor powersgd_compressor(models::Model& model, const TrainConfig& config);

}  // namespace distsgd::algo::compression
