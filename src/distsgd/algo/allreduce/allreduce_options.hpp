// The flags of AR-SGD: how communication overlaps backward (--overlap) and the gradient buckets' sizes.
#pragma once
#include "distsgd/catalog/algorithm_choices.hpp"
#include "distsgd/core/option.hpp"

namespace distsgd::algo::allreduce {

// none: one allreduce after backward; wfbp: bucketed allreduces during backward (wait-free backprop);
// multistep: reduce-scatter during backward, sliced update, allgather during the next forward (Lee et al. 2018).
using Overlap = catalog::choices::Overlap;

extern const StoredOption<Overlap> kOverlap;
extern const StoredOption<double> kBucketMb;
extern const StoredOption<double> kFirstBucketMb;

}  // namespace distsgd::algo::allreduce
