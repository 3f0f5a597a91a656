// The algorithms' numeric settings that `distsgd train` (algo/'s StoredOptions) and `distsgd simulate`
// (sim/simulator_settings.cpp) both take, each declared once here: flag, default (algorithm_defaults.hpp), help and
// rule. Study, validate and advise hand the same flags to both. Settings that are names (--overlap, --sharding,
// --gossip-mode, ...) stay where their enumeration is, and the AR-SGD bucket sizes differ on purpose (simulate takes
// --bucket-mb 0: a bucket per tensor, for MG-WFBP's comparisons; train's must be positive).
#pragma once
#include <cstdint>

#include "distsgd/catalog/algorithm_defaults.hpp"
#include "distsgd/core/option.hpp"

namespace distsgd::catalog::options {

template <class T>
struct Declared {
  const char* flag;
  T default_value;
  const char* help;
  Rule<T> rule;
};

inline const Declared<int64_t> kStaleness{
    "--staleness", defaults::kStaleness,
    "ssp: staleness bound s (pull every s+1 iterations, and whenever the slowest worker is more than s clocks "
    "behind)",
    non_negative<int64_t>()};
inline const Declared<int64_t> kTau{"--tau", defaults::kTau, "easgd: iterations between elastic exchanges",
                                    at_least<int64_t>(1)};
inline const Declared<int64_t> kPi{
    "--pi", defaults::kPi, "aladdin: gradients of one worker that trigger a global update", at_least<int64_t>(1)};
inline const Declared<double> kGossipProbability{"--gossip-prob", defaults::kGossipProbability,
                                                 "gosgd: probability of a push after each iteration (IPDPS: 0.01)",
                                                 within<double>(0, 1)};
inline const Declared<int64_t> kSgpOverlap{
    "--sgp-overlap", defaults::kSgpOverlap,
    "sgp: 0 waits for each iteration's message, 1 lets it arrive one iteration late", within<int64_t>(0, 1)};
inline const Declared<int64_t> kSyncEvery{
    "--sync-every", defaults::kSyncEvery,
    "localsgd, slowmo, diloco: inner steps between two exchanges of the whole model (H)", at_least<int64_t>(1)};
inline const Declared<int64_t> kFragments{
    "--fragments", defaults::kFragments,
    "diloco: fragments of the model (contiguous groups of whole parameters) synchronised in turn, one every H/F steps "
    "(Streaming DiLoCo)",
    at_least<int64_t>(1)};
inline const Declared<int64_t> kFragmentDelay{
    "--fragment-delay", defaults::kFragmentDelay,
    "diloco: inner steps a fragment's exchange overlaps before it is merged (Streaming DiLoCo's tau; below H/F)",
    non_negative<int64_t>()};
inline const Declared<int64_t> kOuterBits{
    "--outer-bits",
    defaults::kOuterBits,
    "diloco: bits per value of the exchanged pseudo-gradients: 32 (float allreduce) or 16, 8, 4 (blockwise min-max "
    "quantised, 64 values per block with a float minimum and step; reduce-scatter by alltoall, allgather)",
    {[](const int64_t& v) { return v == 4 || v == 8 || v == 16 || v == 32; }, "must be 4, 8, 16 or 32"}};

// distsgd train's option of a declaration (its value lives in TrainConfig::algorithm_settings).
template <class T>
StoredOption<T> stored_option(const Declared<T>& d) {
  return StoredOption<T>(d.flag, d.default_value, d.help, d.rule);
}

}  // namespace distsgd::catalog::options
