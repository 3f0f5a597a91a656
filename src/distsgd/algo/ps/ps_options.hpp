// The flags every parameter-server algorithm takes: how the flat vector is cut into shards (--sharding) and where
// momentum and weight decay live (--momentum-at, for the algorithms where the papers leave it open).
#pragma once
#include "distsgd/core/option.hpp"

#include <vector>

namespace distsgd::algo::ps {

// memory: equal contiguous ranges of the flat vector; layer: whole tensors (ps/shard_layout.hpp).
enum class Sharding { kMemory, kLayer };
const EnumNames<Sharding>& enum_names(Sharding);

// auto: the algorithm's own choice; both (ALADDIN): the workers' local steps and the server's global updates.
enum class MomentumAt { kWorker, kServer, kBoth, kAuto };
const EnumNames<MomentumAt>& enum_names(MomentumAt);

extern const StoredOption<Sharding> kSharding;
extern const StoredOption<MomentumAt> kMomentumAt;

// Refuses a --momentum-at place the algorithm has no use for (and, under --compress dgc, momentum at the server).
void check_momentum_placement(const TrainConfig& config, const std::string& algorithm,
                              const std::vector<MomentumAt>& places);

}  // namespace distsgd::algo::ps
