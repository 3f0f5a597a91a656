// AR-SGD with Deep Gradient Compression (--algo arsgd --compress dgc): after backward each worker selects its
// DGC entries; one allgather exchanges every worker's [values | indices] (k per tensor depends on the density
// alone, so every worker sends the same size); each worker sums them in rank order into a dense gradient,
// divides by n and applies plain SGD (momentum and weight decay live in the compressor). Every worker computes
// the same update, so the replicas stay identical, as in dense AR-SGD. Sparse vectors cannot be summed by
// allreduce without densifying (different workers pick different indices), hence allgather (Lin et al. §5).
#pragma once
#include "distsgd/algo/algorithm.hpp"

#include <memory>

namespace distsgd::algo::compression {

std::unique_ptr<WorkerAlgorithm> make_sparse_allgather_sgd(const WorkerSetup& setup);

}  // namespace distsgd::algo::compression
