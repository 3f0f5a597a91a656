// The defaults of the algorithms' numeric settings, written once: train's options (the StoredOptions in algo/),
// `distsgd simulate` and the discrete-event simulator (sim/algorithm_settings.hpp) all read them from here.
// Settings that are names (--gossip-mode, --aladdin-variant, --base, --sharding) keep their defaults beside their
// names: an enumeration in algo/, its text in sim/.
#pragma once
#include <cstdint>

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

}  // namespace distsgd::catalog::defaults
