// The flags of the low-communication family (spec: "The low-communication family"): how often the workers
// exchange, the outer optimizer over the pseudo-gradients, and Streaming DiLoCo's fragments and quantised payloads.
#pragma once
#include "distsgd/catalog/algorithm_choices.hpp"
#include "distsgd/core/option.hpp"

namespace distsgd::algo::outer {

// What runs between SlowMo's exact averages (fairscale's slowmo_base_algorithm): local steps (local SGD), or SGP's
// push-sum gossip (slowmo_over_sgp.hpp).
using SlowMoBase = catalog::choices::SlowMoBase;

extern const StoredOption<int64_t> kSyncEvery;  // H: inner steps between exchanges (of the whole model)
extern const StoredOption<double> kOuterLr;     // DiLoCo's outer Nesterov SGD
extern const StoredOption<double> kOuterMomentum;
extern const StoredOption<double> kSlowLr;          // SlowMo's alpha
extern const StoredOption<double> kSlowMomentum;    // SlowMo's beta
extern const StoredOption<SlowMoBase> kSlowMoBase;  // SlowMo's base algorithm
extern const StoredOption<int64_t> kFragments;      // Streaming DiLoCo: F fragments synchronised in turn
extern const StoredOption<int64_t> kFragmentDelay;  // tau: inner steps a fragment's exchange overlaps
extern const StoredOption<double> kFragmentAlpha;   // weight of the local parameters when a fragment is merged
extern const StoredOption<int64_t> kOuterBits;      // bits per value of the exchanged pseudo-gradients

}  // namespace distsgd::algo::outer
