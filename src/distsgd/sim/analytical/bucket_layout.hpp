// The gradient buckets of wait-free backprop, from a model profile: what the discrete-event simulator's AR-SGD and
// parameter-server workloads and the analytical wait-free BSP model (ps_wait_free.hpp) push bucket by bucket.
#pragma once
#include <cstddef>
#include <vector>

#include "distsgd/sim/platform/model_profile.hpp"

namespace distsgd::sim {

// Gradient buckets as AR-SGD forms them (algo/allreduce/gradient_buckets.cpp, make_buckets): tensors taken in backward
// order (last first); bucket 0 holds at most `first_bytes` (at least one tensor), the others at most `bucket_bytes`.
// Bucket b covers tensors [first[b], last[b]] in forward order; bucket 0 holds the last tensors.
struct BucketLayout {
  std::vector<size_t> first, last;
  std::vector<double> bytes;
  size_t size() const { return bytes.size(); }
};
BucketLayout make_bucket_layout(const ModelProfile& profile, double first_bytes, double bucket_bytes);

}  // namespace distsgd::sim
