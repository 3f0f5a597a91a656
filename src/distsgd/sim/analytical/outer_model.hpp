// The low-communication family in the simulator (spec: "The low-communication family"; algo/outer/): every worker
// computes alone, and every H/F steps one fragment of the model (m/F bytes: the DES and this model cut the model
// evenly, the real run on whole tensors) is exchanged: a ring allreduce of floats, or at 4, 8 or 16 bits an alltoall
// and an allgather of the quantised slices (algo/outer/quantized_allreduce.hpp's format: 64 values per block and
// 8 bytes of header). An exchange started `delay` steps before its merge overlaps that many steps of compute.
// DiLoCo with --compress powersgd exchanges the whole pseudo-gradient at each merge as AR-SGD's PowerSGD step does
// (powersgd_model.hpp: the error feedback and three products, the allreduces of the uncompressed tensors, of P and
// of Q), from the --powersgd-start-th exchange on; the analytical form is that steady state.
// SlowMo over SGP (--base sgp; algo/outer/slowmo_over_sgp.cpp) adds SGP's step without overlap to every inner step:
// a push of the model to the exponential graph's peer, waited for (as decentralized_model.hpp's SGP), then the merge.
#pragma once
#include <cstdint>

#include "distsgd/catalog/algorithm_defaults.hpp"
#include "distsgd/sim/analytical/prediction.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "distsgd/sim/platform/model_profile.hpp"

namespace distsgd::sim {

struct OuterLoopSettings {
  int64_t sync_every = catalog::defaults::kSyncEvery;  // H
  int64_t fragments = catalog::defaults::kFragments;   // F
  int64_t delay = catalog::defaults::kFragmentDelay;   // steps an exchange overlaps
  int64_t bits = catalog::defaults::kOuterBits;        // of the exchanged values
  int64_t powersgd_rank = 0;  // diloco --compress powersgd: the rank (0: off; one fragment, 32 bits, no delay)
  bool sgp_base = false;      // slowmo --base sgp: an SGP push every inner step (one fragment, 32 bits, no delay)
};

// Throws Error (naming the flag) for settings distsgd train would refuse.
void check_outer_settings(const OuterLoopSettings& settings);

// Bytes on the wire for `float_bytes` of floats quantised to `bits` (as algo/outer's format: blocks of 64 values, 8
// header bytes each); float_bytes itself at 32 bits.
double quantized_message_bytes(double float_bytes, int64_t bits);

// Seconds of one fragment's exchange on `workers` workers, and how much of it a step of compute can hide: the two
// halves of a quantised exchange are started one step apart.
struct OuterExchangeCost {
  double first_seconds = 0;     // the allreduce (32 bits), or the alltoall
  double second_seconds = 0;    // the allgather of a quantised exchange; 0 at 32 bits
  double compress_seconds = 0;  // PowerSGD: its error feedback and products, before and between its allreduces
};
OuterExchangeCost outer_exchange_cost(const ModelProfile& profile, int64_t workers, const ClusterDescription& cluster,
                                      const OuterLoopSettings& settings);

// Per step: compute, plus the exchange's exposed part spread over the H/F steps between exchanges.
Prediction predict_outer_loop(const ModelProfile& profile, int64_t workers, const ClusterDescription& cluster,
                              const OuterLoopSettings& settings);

// The bytes each worker sends per step, on average (for tests and reports): 1/H of AR-SGD's at 32 bits; with PowerSGD
// 1/H of AR-SGD's PowerSGD step; over SGP, plus the model's bytes every step.
double outer_bytes_per_step(const ModelProfile& profile, int64_t workers, const OuterLoopSettings& settings);

}  // namespace distsgd::sim
