// The defaults of the algorithms' numeric settings, written once: train's options (the StoredOptions in algo/),
// `distsgd simulate` and the discrete-event simulator (sim/algorithm_settings.hpp) all read them from here.
// Settings that are names are enumerated in algorithm_choices.hpp; train holds the enumeration, the simulator its word.
#pragma once
#include <cstdint>

#include "distsgd/catalog/algorithm_choices.hpp"

namespace distsgd::catalog::defaults {

inline constexpr int64_t kStaleness = 10;           // ssp --staleness
inline constexpr int64_t kTau = 2;                  // easgd --tau
inline constexpr int64_t kPi = 4;                   // aladdin --pi
inline constexpr double kGossipProbability = 0.01;  // gosgd --gossip-prob (the IPDPS paper's)
inline constexpr int64_t kSgpOverlap = 0;           // sgp --sgp-overlap
inline constexpr int64_t kSyncEvery = 16;           // localsgd, slowmo, diloco --sync-every (H)
inline constexpr int64_t kFragments = 1;            // diloco --fragments
inline constexpr int64_t kFragmentDelay = 0;        // diloco --fragment-delay
inline constexpr int64_t kOuterBits = 32;           // diloco --outer-bits
inline constexpr int64_t kPowerSgdRank = 2;         // --compress powersgd --rank
inline constexpr int64_t kPowerSgdStart = 10;       // --compress powersgd --powersgd-start

inline constexpr choices::Overlap kOverlap = choices::Overlap::kWfbp;
inline constexpr choices::Sharding kSharding = choices::Sharding::kMemory;
inline constexpr choices::LocalAggregation kLocalAggregation = choices::LocalAggregation::kNone;
inline constexpr choices::Compression kCompress = choices::Compression::kNone;
inline constexpr choices::GossipMode kGossipMode = choices::GossipMode::kPull;
inline constexpr choices::AladdinVariant kAladdinVariant = choices::AladdinVariant::kFull;
inline constexpr choices::SlowMoBase kSlowMoBase = choices::SlowMoBase::kLocalSgd;

}  // namespace distsgd::catalog::defaults
