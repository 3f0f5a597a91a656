// AR-SGD (spec: "AR-SGD"): gradients averaged by allreduce, the same optimizer step on every worker. The variant
// is picked here, when the worker is made: --overlap none|wfbp|multistep, with --compress dgc the sparse
// allgather of algo/compression/sparse_allgather_sgd.hpp, with --compress powersgd powersgd_allreduce.cpp.
#include "distsgd/algo/allreduce/allreduce_options.hpp"
#include "distsgd/algo/allreduce/allreduce_worker.hpp"
#include "distsgd/algo/compression/compression_options.hpp"
#include "distsgd/algo/compression/sparse_allgather_sgd.hpp"

namespace distsgd::algo {
namespace {

// An --overlap the compressed exchanges would ignore (they run after backward).
bool overlap_given_other_than_none(const TrainConfig& c) {
  return allreduce::kOverlap.given(c) && allreduce::kOverlap.of(c) != allreduce::Overlap::kNone;
}

}  // namespace

AlgorithmInfo allreduce_sgd_algorithm() {
  using allreduce::Overlap;
  AlgorithmInfo info;
  info.name = "arsgd";
  info.description = "allreduce SGD (--overlap none|wfbp|multistep)";
  info.takes_optimizer = true;  // not with --compress dgc: validate() below
  info.options = {&allreduce::kOverlap.spec(), &allreduce::kBucketMb.spec(), &allreduce::kFirstBucketMb.spec()};
  for (const auto* o : compression::compression_options()) info.options.push_back(o);
  for (const auto* o : compression::powersgd_option_specs()) info.options.push_back(o);
  info.validate = [](const TrainConfig& c) {
    const bool powersgd = compression::powersgd_enabled(c);
    require(powersgd || (!compression::kPowerSgdRank.given(c) && !compression::kPowerSgdStart.given(c)),
            "--rank and --powersgd-start apply with --compress powersgd only");
    require(!powersgd || !overlap_given_other_than_none(c),
            "--compress powersgd with arsgd allreduces P, then Q, after backward (each needs the one before): "
            "--overlap " +
                name_of(allreduce::kOverlap.of(c)) + " does not apply (leave --overlap out, or give none)");
    // The sparse exchange is one allgather after backward: that is --overlap none, and any other overlap given
    // would be ignored.
    require(!compression::dgc_enabled(c) || !overlap_given_other_than_none(c),
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
    if (compression::powersgd_enabled(s.config)) return allreduce::make_powersgd_allreduce(s);
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
