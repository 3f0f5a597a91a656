#include "distsgd/algo/allreduce/allreduce_options.hpp"

#include "distsgd/catalog/algorithm_options.hpp"

namespace distsgd::algo::allreduce {

const StoredOption<Overlap> kOverlap = catalog::options::stored_option(catalog::options::kOverlap);
const StoredOption<double> kBucketMb{"--bucket-mb", 25, "wfbp: gradient bucket size", positive<double>()};
const StoredOption<double> kFirstBucketMb{"--first-bucket-mb", 1, "wfbp: size of the first (last layers') bucket",
                                          positive<double>()};

}  // namespace distsgd::algo::allreduce
