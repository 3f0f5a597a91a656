#include "distsgd/algo/allreduce/allreduce_options.hpp"

namespace distsgd::algo::allreduce {

const EnumNames<Overlap>& enum_names(Overlap) {
  static const EnumNames<Overlap> names{
      {Overlap::kNone, "none"}, {Overlap::kWfbp, "wfbp"}, {Overlap::kMultistep, "multistep"}};
  return names;
}

const StoredOption<Overlap> kOverlap{
    "--overlap", Overlap::kWfbp,
    "AR-SGD: none (one allreduce after backward), wfbp (bucketed allreduce during backward), multistep "
    "(reduce-scatter during backward, sliced update, allgather during next forward); BSP, ASP, SSP: none (push "
    "after backward) or wfbp (push each bucket's shard pieces during backward)"};
const StoredOption<double> kBucketMb{"--bucket-mb", 25, "wfbp: gradient bucket size", positive<double>()};
const StoredOption<double> kFirstBucketMb{"--first-bucket-mb", 1, "wfbp: size of the first (last layers') bucket",
                                          positive<double>()};

}  // namespace distsgd::algo::allreduce
