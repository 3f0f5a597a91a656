// AR-SGD (spec: "AR-SGD"): gradients averaged by allreduce, the same optimizer step on every worker. The variant
// is picked here, when the worker is made: --overlap none|wfbp|multistep, or with --compress dgc the sparse
// allgather of algo/compression/sparse_allgather_sgd.hpp.
#include "distsgd/algo/allreduce/allreduce_options.hpp"
#include "distsgd/algo/allreduce/allreduce_worker.hpp"
#include "distsgd/algo/compression/compression_options.hpp"
#include "distsgd/algo/compression/sparse_allgather_sgd.hpp"

namespace distsgd::algo {

AlgorithmInfo allreduce_sgd_algorithm() {
  using allreduce::Overlap;
  AlgorithmInfo info;
  info.name = "arsgd";
  info.description = "allreduce SGD (--overlap none|wfbp|multistep)";
  info.takes_optimizer = true;  // not with --compress dgc: validate() below
  info.options = {&allreduce::kOverlap.spec(), &allreduce::kBucketMb.spec(), &allreduce::kFirstBucketMb.spec()};
  for (const auto* o : compression::compression_options()) info.options.push_back(o);
  info.validate = [](const TrainConfig& c) {
    // The sparse exchange is one allgather after backward: that is --overlap none, and any other overlap given
    // would be ignored.
    const bool overlap_ignored = allreduce::kOverlap.given(c) && allreduce::kOverlap.of(c) != Overlap::kNone;
    require(!compression::dgc_enabled(c) || !overlap_ignored,
            "--compress dgc with arsgd exchanges the sparse gradient in one allgather after backward: --overlap " +
                name_of(allreduce::kOverlap.of(c)) + " does not apply (leave --overlap out, or give none)");
    // DGC's momentum correction is momentum SGD itself (the accumulators are its velocity).
    require(!compression::dgc_enabled(c) || c.optimizer == Optimizer::kSgd,
            "--compress dgc accumulates momentum SGD's velocity on the worker (momentum correction): --optimizer " +
                name_of(c.optimizer) + " does not combine with it");
  };
  info.make_worker = [](const WorkerSetup& s) -> std::unique_ptr<WorkerAlgorithm> {
    if (compression::dgc_enabled(s.config)) {
      return compression::make_sparse_allgather_sgd(s);
    }
    const bool single_worker = !s.comm || s.comm->workers() == 1;
    switch (single_worker ? Overlap::kNone : allreduce::kOverlap.of(s.config)) {
      case Overlap::kNone:
        return allreduce::make_whole_gradient_allreduce(s);
      case Overlap::kWfbp:
        return allreduce::make_bucketed_allreduce(s);
      case Overlap::kMultistep:
        return allreduce::make_multistep_allreduce(s);
    }
    throw Error("unknown --overlap");
  };
  return info;
}

}  // namespace distsgd::algo
