// Analytical predictions (spec/simulator.md, "Two fidelities" 1 and "Per-algorithm models") for the synchronous
// algorithms, from a model profile: AR-SGD without overlap, with wait-free backprop over gradient buckets or over
// MG-WFBP's merged groups, and multistep; BSP over S parameter-server shards.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "distsgd/sim/analytical/collective_costs.hpp"
#include "distsgd/sim/analytical/merged_gradients.hpp"
#include "distsgd/sim/analytical/prediction.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "distsgd/sim/platform/model_profile.hpp"

namespace distsgd::sim {

// How AR-SGD overlaps communication with compute (distsgd train --overlap, and the spec's "The DAG model"):
//   buckets: wait-free backprop over gradient buckets as AR-SGD forms them: filled in backward order (last tensor
//     first), the first up to `first_bucket_bytes`, the others up to `bucket_bytes`; a tensor larger than a bucket
//     is a bucket of its own. Each bucket is reduced when its last gradient is ready. bucket_bytes <= 0: one bucket
//     per tensor.
//   mgwfbp: wait-free backprop over the groups of tensors MG-WFBP's greedy merge picks (merged_gradients.hpp); the
//     bucket sizes are ignored.
//   merge-optimal: as mgwfbp, over the grouping that makes the last group's communication end earliest, found
//     exactly (merge_gradients_optimal): what the best merging could do, where MG-WFBP's local test can merge too
//     much at a large alpha.
//   multistep (Lee et al., MLHPC 2018; algo/allreduce/multistep_allreduce.cpp): over the same buckets, each bucket
//     reduce-scattered (an alltoall of 1/P slices and a local sum) as its gradients are ready, hidden under backward
//     by the wait-free recurrence; each worker updates its 1/P slice (update cost / P); the slices are allgathered,
//     input-side bucket first, hidden under the next forward by the mirror recurrence (a bucket's forward waits for
//     its own gather only).
enum class AllreduceSchedule { kBuckets, kMgwfbp, kOptimalMerge, kMultistep };

struct AllreduceSettings {
  bool wait_free = true;  // false: one allreduce of the whole gradient after the backward pass (--overlap none)
  double bucket_bytes = 25e6;
  double first_bucket_bytes = 1e6;
  AllreduceSchedule schedule = AllreduceSchedule::kBuckets;  // with wait_free
};

// The settings for `distsgd simulate --overlap` none, wfbp, mgwfbp, merge-optimal or multistep; throws Error naming the
// flag.
AllreduceSettings allreduce_settings(const std::string& overlap, double bucket_bytes, double first_bucket_bytes);
std::vector<std::string> allreduce_overlap_names();

// `ring` is the per-step cost of the ring allreduce (and allgather); `alltoall` that of the multistep
// reduce-scatter's alltoall. A collective that overlaps compute (every wait-free and multistep one) pays
// `interference_alpha` more per step (ClusterDescription::interference_alpha_seconds); the one allreduce after
// backward of --overlap none does not. An allreduce's start-ups (alpha and interference) are scaled by
// `allreduce_alpha_scale` (ClusterDescription::allreduce_alpha_scale: a tree's), the allgather's are not.
// The groups of tensors --overlap mgwfbp (MG-WFBP's greedy merge, kMgwfbp) or merge-optimal (kOptimalMerge) sends at
// `workers` over `ring`, deciding with the allreduce's cost beside compute (its start-ups with the interference, scaled
// as the allreduce's): what the analytical model sends, and the discrete-event simulator's buckets for the same
// overlaps.
MergedLayers merged_tensors(const ModelProfile& profile, int64_t workers, const LinkCost& ring, AllreduceSchedule merge,
                            double interference_alpha = 0, double allreduce_alpha_scale = 1);

Prediction predict_allreduce_sgd(const ModelProfile& profile, int64_t workers, const LinkCost& ring,
                                 const LinkCost& alltoall, const AllreduceSettings& settings,
                                 double interference_alpha = 0, double allreduce_alpha_scale = 1);
// With one link cost for every collective.
Prediction predict_allreduce_sgd(const ModelProfile& profile, int64_t workers, const LinkCost& allreduce,
                                 const AllreduceSettings& settings);
// With the cluster's costs for `workers` (its topology, or its measured allreduce fit).
Prediction predict_allreduce_sgd(const ModelProfile& profile, int64_t workers, const ClusterDescription& cluster,
                                 const AllreduceSettings& settings);

// How a parameter-server run lays out its shards and its pushes (distsgd train's --sharding, --local-aggregation).
struct PsLayout {
  std::string sharding =
      "memory";  // memory | layer (sim/analytical/shard_layout.hpp): the largest shard loads its server most
  bool local_aggregation = false;  // BSP --local-aggregation host: one push per node, of its workers' sum
  // BSP --overlap wfbp: pieces pushed during backward, bucket by bucket (AR-SGD's buckets, cut at the shards).
  bool wait_free = false;
  double bucket_bytes = 25.0 * 1024 * 1024, first_bucket_bytes = 1024.0 * 1024;
};

// BSP: every worker pushes its shard of m to each of S shards (incast P*shard at the largest), the shards aggregate
// P*shard*gamma and update, the workers pull the shards back. The workers of one node push (and pull) at once, so
// each gets its share of the node's link. With local aggregation the node's other workers hand their gradients to
// its lowest-ranked one over the intra-node link, which sums them ((k-1) m gamma), pushes alone over the node's
// whole link, and hands the parameters back: the shards see one push per node.
// With wait_free, each bucket's gradient goes through the round's stages as soon as backward has produced it, one
// bucket after another at each stage (a flow shop): with local aggregation the hand-over to the node's leader and its
// sum, then the push, the shard's aggregation and update, the pull; the parameters go back to the node's other
// workers after the last pull.
Prediction predict_bsp(const ModelProfile& profile, int64_t workers, int64_t servers, const ClusterDescription& cluster,
                       const PsLayout& layout = {});

}  // namespace distsgd::sim
