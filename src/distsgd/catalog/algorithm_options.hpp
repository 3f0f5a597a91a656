// The algorithms' settings that `distsgd train` (algo/'s StoredOptions) and `distsgd simulate`
// (sim/simulator_settings.cpp) both take, each declared once here: flag, default (algorithm_defaults.hpp), help and
// rule, numbers and names alike (a name's words are its enumeration's, algorithm_choices.hpp; simulate may accept
// words of its own beside them, e.g. --overlap mgwfbp). Study, validate and advise hand the same flags to both. The
// AR-SGD bucket sizes differ on purpose (simulate takes --bucket-mb 0: a bucket per tensor, for MG-WFBP's
// comparisons; train's must be positive), and so does --density (simulate's 0 means no DGC).
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

inline const Declared<int64_t> kPowerSgdRank{
    "--rank", defaults::kPowerSgdRank,
    "PowerSGD: rank r of each matrix's approximation P Q^T (clamped to min(n, m) per matrix; a matrix is compressed "
    "only where (n + m) r is below n m / 2, as powerSGD_hook decides)",
    at_least<int64_t>(1)};
inline const Declared<int64_t> kPowerSgdStart{
    "--powersgd-start", defaults::kPowerSgdStart,
    "PowerSGD: steps of plain allreduce before compression starts (powerSGD_hook's start_powerSGD_iter)",
    non_negative<int64_t>()};

// Settings that are names: the words are the enumeration's, so a rule is not needed (a word outside it is refused
// naming the others).
inline const Declared<choices::Overlap> kOverlap{
    "--overlap",
    defaults::kOverlap,
    "AR-SGD: none (one allreduce after backward), wfbp (bucketed allreduce during backward), multistep "
    "(reduce-scatter during backward, sliced update, allgather during next forward); BSP, ASP, SSP: none (push "
    "after backward) or wfbp (push each bucket's shard pieces during backward)",
    {}};
inline const Declared<choices::Sharding> kSharding{
    "--sharding",
    defaults::kSharding,
    "parameter server: memory (equal contiguous ranges) or layer (whole tensors, balanced by bytes)",
    {}};
inline const Declared<choices::LocalAggregation> kLocalAggregation{
    "--local-aggregation",
    defaults::kLocalAggregation,
    "BSP: host (workers sharing a host sum their gradients and one pushes the sum; under --overlap wfbp bucket by "
    "bucket while backward goes on) or none",
    {}};
inline const Declared<choices::Compression> kCompress{
    "--compress",
    defaults::kCompress,
    "gradient uplink compression: none, dgc (Deep Gradient Compression: top --density of each tensor with "
    "momentum correction, factor masking, clipping, warm-up), or powersgd (arsgd: rank --rank approximations of "
    "each matrix, with error feedback, as PyTorch's powerSGD_hook; diloco: of the pseudo-gradient at each exchange)",
    {}};
inline const Declared<choices::GossipMode> kGossipMode{
    "--gossip-mode",
    defaults::kGossipMode,
    "gossip: pull (average with a random peer's model) or push (push-sum to a random peer)",
    {}};
inline const Declared<choices::AladdinVariant> kAladdinVariant{
    "--aladdin-variant",
    defaults::kAladdinVariant,
    "ALADDIN: full, l1 (local self-update only), l2 (mixing, PS applies each gradient at once)",
    {}};
inline const Declared<choices::SlowMoBase> kSlowMoBase{
    "--base",
    defaults::kSlowMoBase,
    "slowmo: between the exact averages, local steps (localsgd) or SGP's push-sum gossip on the exponential graph "
    "(sgp, without overlap)",
    {}};

// distsgd train's option of a declaration (its value lives in TrainConfig::algorithm_settings).
template <class T>
StoredOption<T> stored_option(const Declared<T>& d) {
  return StoredOption<T>(d.flag, d.default_value, d.help, d.rule);
}

}  // namespace distsgd::catalog::options
