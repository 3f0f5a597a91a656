#include "distsgd/algo/outer/outer_options.hpp"
#include "distsgd/catalog/algorithm_options.hpp"

namespace distsgd::algo::outer {

const StoredOption<int64_t> kSyncEvery = catalog::options::stored_option(catalog::options::kSyncEvery);
const StoredOption<double> kOuterLr{"--outer-lr", 0.7, "diloco: learning rate of the outer Nesterov SGD",
                                    positive<double>()};
const StoredOption<double> kOuterMomentum{"--outer-momentum",
                                          0.9,
                                          "diloco: momentum of the outer Nesterov SGD",
                                          {[](const double& v) { return v >= 0 && v < 1; }, "must be in [0, 1)"}};
const StoredOption<double> kSlowLr{"--slow-lr", 1.0, "slowmo: slow learning rate alpha", positive<double>()};
const StoredOption<double> kSlowMomentum{"--slow-momentum",
                                         0.5,
                                         "slowmo: slow momentum beta",
                                         {[](const double& v) { return v >= 0 && v < 1; }, "must be in [0, 1)"}};
const StoredOption<SlowMoBase> kSlowMoBase = catalog::options::stored_option(catalog::options::kSlowMoBase);
const StoredOption<int64_t> kFragments = catalog::options::stored_option(catalog::options::kFragments);
const StoredOption<int64_t> kFragmentDelay = catalog::options::stored_option(catalog::options::kFragmentDelay);
const StoredOption<double> kFragmentAlpha{
    "--fragment-alpha", 0,
    "diloco: merge x = alpha x_local + (1 - alpha) x_global (0: take the outer optimizer's result)",
    within<double>(0, 1)};
const StoredOption<int64_t> kOuterBits = catalog::options::stored_option(catalog::options::kOuterBits);

}  // namespace distsgd::algo::outer
