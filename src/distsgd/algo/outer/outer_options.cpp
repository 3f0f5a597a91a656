#include "distsgd/algo/outer/outer_options.hpp"
#include "distsgd/catalog/algorithm_defaults.hpp"

namespace distsgd::algo::outer {

const StoredOption<int64_t> kSyncEvery{
    "--sync-every", catalog::defaults::kSyncEvery,
    "localsgd, slowmo, diloco: inner steps between two exchanges of the whole model (H)", at_least<int64_t>(1)};
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
const EnumNames<SlowMoBase>& enum_names(SlowMoBase) {
  static const EnumNames<SlowMoBase> names{{SlowMoBase::kLocalSgd, "localsgd"}, {SlowMoBase::kSgp, "sgp"}};
  return names;
}
const StoredOption<SlowMoBase> kSlowMoBase{
    "--base", SlowMoBase::kLocalSgd,
    "slowmo: between the exact averages, local steps (localsgd) or SGP's push-sum gossip on the exponential graph "
    "(sgp, without overlap)"};
const StoredOption<int64_t> kFragments{
    "--fragments", catalog::defaults::kFragments,
    "diloco: fragments of the model (contiguous groups of whole parameters) synchronised in turn, one every "
    "H/F steps (Streaming DiLoCo)",
    at_least<int64_t>(1)};
const StoredOption<int64_t> kFragmentDelay{
    "--fragment-delay", catalog::defaults::kFragmentDelay,
    "diloco: inner steps a fragment's exchange overlaps before it is merged (Streaming DiLoCo's tau; below H/F)",
    at_least<int64_t>(0)};
const StoredOption<double> kFragmentAlpha{
    "--fragment-alpha", 0,
    "diloco: merge x = alpha x_local + (1 - alpha) x_global (0: take the outer optimizer's result)",
    within<double>(0, 1)};
const StoredOption<int64_t> kOuterBits{
    "--outer-bits",
    catalog::defaults::kOuterBits,
    "diloco: bits per value of the exchanged pseudo-gradients: 32 (float allreduce) or 16, 8, 4 (blockwise "
    "min-max quantised, 64 values per block with a float minimum and step; reduce-scatter by alltoall, "
    "allgather)",
    {[](const int64_t& v) { return v == 4 || v == 8 || v == 16 || v == 32; }, "must be 4, 8, 16 or 32"}};

}  // namespace distsgd::algo::outer
