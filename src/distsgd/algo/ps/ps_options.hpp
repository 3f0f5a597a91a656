// The flags every parameter-server algorithm takes: how the flat vector is cut into shards (--sharding) and where
// momentum and weight decay live (--momentum-at, for the algorithms where the papers leave it open); and the
// optimizations of the gradient uplink: wait-free backprop (--overlap, shared with AR-SGD) for BSP, ASP and SSP,
// and BSP's local aggregation.
#pragma once
#include "distsgd/catalog/algorithm_choices.hpp"
#include "distsgd/core/option.hpp"

#include <vector>

namespace distsgd::algo::ps {

// memory: equal contiguous ranges of the flat vector; layer: whole tensors balanced by bytes (ps/shard_layout.hpp).
using Sharding = catalog::choices::Sharding;

// auto: the algorithm's own choice; both (ALADDIN): the workers' local steps and the server's global updates.
enum class MomentumAt { kWorker, kServer, kBoth, kAuto };
const EnumNames<MomentumAt>& enum_names(MomentumAt);

// none: every worker pushes its own gradient; host: workers that share a host sum their gradients (in rank order)
// and the lowest-ranked of them pushes the sum and hands the reply to the others (spec: "Shared parameter-server
// substrate", BSP only). Hosts: ps/host_groups.hpp.
using LocalAggregation = catalog::choices::LocalAggregation;

extern const StoredOption<Sharding> kSharding;
extern const StoredOption<MomentumAt> kMomentumAt;
extern const StoredOption<LocalAggregation> kLocalAggregation;

// Whether the gradient goes out during backward (--overlap wfbp, the default as for AR-SGD): pieces pushed as
// backward produces them, or with local aggregation each bucket summed at the host's leader and pushed as it is
// complete (ps/host_bucket_sums.hpp). DGC's selection needs the whole gradient: it goes after backward whatever the
// default.
bool wait_free_backprop(const TrainConfig& config);
// Refuses --overlap multistep (AR-SGD's alone) and an explicit --overlap wfbp that DGC would ignore.
void check_overlap(const TrainConfig& config, const std::string& algorithm);

// Refuses a --momentum-at place the algorithm has no use for (and, under --compress dgc, momentum at the server).
void check_momentum_placement(const TrainConfig& config, const std::string& algorithm,
                              const std::vector<MomentumAt>& places);

}  // namespace distsgd::algo::ps
