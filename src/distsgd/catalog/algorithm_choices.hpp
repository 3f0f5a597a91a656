// The algorithms' settings that are names, enumerated once: `distsgd train` holds them as these enumerations
// (algo/'s StoredOptions), `distsgd simulate` as their words, and both accept the same words because both read these
// tables (catalog/algorithm_options.hpp declares the flags; the defaults are in algorithm_defaults.hpp).
#pragma once
#include "distsgd/core/enum_names.hpp"

namespace distsgd::catalog::choices {

// --overlap. none: one allreduce (or push) after backward; wfbp: bucketed during backward (wait-free backprop);
// multistep: reduce-scatter during backward, sliced update, allgather during the next forward (Lee et al. 2018).
enum class Overlap { kNone, kWfbp, kMultistep };
inline const EnumNames<Overlap>& enum_names(Overlap) {
  static const EnumNames<Overlap> names{
      {Overlap::kNone, "none"}, {Overlap::kWfbp, "wfbp"}, {Overlap::kMultistep, "multistep"}};
  return names;
}

// --sharding. memory: equal contiguous ranges of the flat vector; layer: whole tensors balanced by bytes.
enum class Sharding { kMemory, kLayer };
inline const EnumNames<Sharding>& enum_names(Sharding) {
  static const EnumNames<Sharding> names{{Sharding::kMemory, "memory"}, {Sharding::kLayer, "layer"}};
  return names;
}

// --local-aggregation (BSP). none: every worker pushes its own gradient; host: the workers of a host sum theirs and
// the lowest-ranked pushes the sum.
enum class LocalAggregation { kNone, kHost };
inline const EnumNames<LocalAggregation>& enum_names(LocalAggregation) {
  static const EnumNames<LocalAggregation> names{{LocalAggregation::kNone, "none"}, {LocalAggregation::kHost, "host"}};
  return names;
}

// --compress: the gradient uplink's compression.
enum class Compression { kNone, kDgc, kPowerSgd };
inline const EnumNames<Compression>& enum_names(Compression) {
  static const EnumNames<Compression> names{
      {Compression::kNone, "none"}, {Compression::kDgc, "dgc"}, {Compression::kPowerSgd, "powersgd"}};
  return names;
}

// --gossip-mode (gossip): pull (average with a random peer's model) or push (push-sum to a random peer).
enum class GossipMode { kPull, kPush };
inline const EnumNames<GossipMode>& enum_names(GossipMode) {
  static const EnumNames<GossipMode> names{{GossipMode::kPull, "pull"}, {GossipMode::kPush, "push"}};
  return names;
}

// --aladdin-variant: the paper's full algorithm or one of its two ablations.
enum class AladdinVariant { kFull, kL1, kL2 };
inline const EnumNames<AladdinVariant>& enum_names(AladdinVariant) {
  static const EnumNames<AladdinVariant> names{
      {AladdinVariant::kFull, "full"}, {AladdinVariant::kL1, "l1"}, {AladdinVariant::kL2, "l2"}};
  return names;
}

// --base (SlowMo): what runs between the exact averages, as fairscale's slowmo_base_algorithm: local steps or SGP.
enum class SlowMoBase { kLocalSgd, kSgp };
inline const EnumNames<SlowMoBase>& enum_names(SlowMoBase) {
  static const EnumNames<SlowMoBase> names{{SlowMoBase::kLocalSgd, "localsgd"}, {SlowMoBase::kSgp, "sgp"}};
  return names;
}

}  // namespace distsgd::catalog::choices
