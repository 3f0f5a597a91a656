// The outer loop the low-communication family shares (spec: "The low-communication family"): every H inner steps
// the workers exchange their change since the last exchange and an outer rule turns its mean into the new global
// model, from which every worker goes on. With fragments (Streaming DiLoCo, Douillard et al. 2025), the model is
// cut into F contiguous fragments, one synchronised every H/F steps in turn; a fragment's exchange may start
// `delay` inner steps before it is merged, overlapping them, and the merge keeps `alpha` of the local parameters.
// The schedule is torchft's DiLoCo (meta-pytorch/torchft local_sgd.py): after inner step k of a round of H/F,
// k = H/F - delay prepares fragment (round mod F) and k = H/F merges it.
#pragma once
#include "distsgd/algo/algorithm_state.hpp"
#include "distsgd/catalog/algorithm_defaults.hpp"
#include "distsgd/core/timer.hpp"
#include "distsgd/optim/sgd.hpp"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace distsgd::comm {
class Communicator;
}

namespace distsgd::algo::outer {

enum class OuterRule {
  kAverage,   // local SGD: x = mean(x_i) (the workers' parameters themselves are averaged)
  kNesterov,  // DiLoCo: outer Nesterov SGD on the mean pseudo-gradient mean(x_prev - x_i)
  kSlowMo,    // SlowMo: u = beta u + mean(x_prev - x_i) / gamma; x = x_prev - alpha gamma u (gamma: inner lr)
};

struct Fragment {
  int64_t offset = 0, numel = 0;  // in the flat parameter vector
};

struct OuterSettings {
  OuterRule rule = OuterRule::kAverage;
  int64_t sync_every = catalog::defaults::kSyncEvery;  // H
  std::vector<Fragment> fragments;                     // in order, covering the vector; empty: one, the whole vector
  int64_t delay = catalog::defaults::kFragmentDelay;   // below H / F
  double alpha = 0;                                    // merge: x = alpha x_local + (1 - alpha) x_global
  int64_t bits = catalog::defaults::kOuterBits;        // exchanged values: 32 (float allreduce), 16, 8, 4 (quantised)
  double lr = 1;                                       // DiLoCo: outer lr; SlowMo: alpha
  double momentum = 0;                                 // DiLoCo: outer momentum; SlowMo: beta
  // Replaces the exchange of a whole-model pseudo-gradient (one fragment, 32 bits, no delay): turns this worker's
  // payload into the workers' mean in place and returns the bytes sent (DiLoCo with --compress powersgd). `exchange`
  // counts the exchanges from 0.
  std::function<int64_t(at::Tensor& payload, int64_t exchange)> mean_of_workers;
};

// Splits parameters (offset, numel in order) into `count` contiguous fragments of whole parameters, each about
// total/count long. Throws distsgd::Error when there are fewer parameters than fragments.
std::vector<Fragment> fragments_of(const std::vector<Fragment>& parameters, int64_t count);

class OuterLoop {
 public:
  // comm: null (or a single worker) exchanges with nobody: the mean is this worker's own.
  OuterLoop(comm::Communicator* comm, at::Tensor params, OuterSettings settings);
  ~OuterLoop();

  // After every inner step; inner_lr is that step's learning rate (SlowMo's gamma).
  void after_inner_step(double inner_lr);
  // At the end of training: a fragment still in flight is merged now (every worker has one, in the same place).
  void complete_in_flight(double inner_lr);

  int64_t bytes_sent() const { return bytes_sent_; }
  double wait_seconds() const { return waiting_.total(); }
  double update_seconds() const { return updating_.total(); }
  int64_t exchanges() const { return exchanges_; }
  const at::Tensor& global_parameters() const { return global_; }

  // Checkpoints, at a step boundary: the global model, the outer momentum, where the schedule is, and a fragment in
  // flight (its exchange is completed first: waiting earlier changes no value).
  void save_state(AlgorithmState& state);
  void load_state(const AlgorithmState& state);

 private:
  struct Exchange;
  void prepare(int64_t fragment);
  void merge(double inner_lr);
  int64_t steps_per_fragment() const;

  comm::Communicator* comm_;
  at::Tensor params_, global_;
  OuterSettings settings_;
  int64_t workers_ = 1;
  optim::MomentumSgd outer_;
  int64_t local_step_ = 0, round_ = 0, exchanges_ = 0, bytes_sent_ = 0;
  std::unique_ptr<Exchange> in_flight_;
  Stopwatch waiting_, updating_;
};

}  // namespace distsgd::algo::outer
