// Merged-gradient wait-free backprop (MG-WFBP; Shi, Chu and Li, INFOCOM 2019, and their code
// github.com/HKBU-HPML/MG-WFBP; spec/simulator.md, "The DAG model"): which consecutive layers' gradients to aggregate
// as one message, so the start-up latency of the many small layers is paid once.
#pragma once
#include <cstddef>
#include <functional>
#include <vector>

#include "distsgd/sim/analytical/dag_model.hpp"

namespace distsgd::sim {

struct MergedLayers {
  std::vector<LayerTimes> layers;        // one per group, forward order: summed times, the group's communication
  std::vector<std::size_t> first_layer;  // each group's first layer (forward order) in the input
  std::vector<double> bytes;             // each group's gradient bytes
};

// The greedy merge, walking layers from the last to the first with the DAG model's recurrence (dag_model.hpp):
// layer l (with whatever was merged into it) is merged into l-1 when l-1's gradient is ready before l's
// communication would finish, and merging saves more start-up latency than the extra wait for l-1 costs. The
// saving is comm_seconds(a) + comm_seconds(b) - comm_seconds(a + b), the alpha term of a linear cost. Merged
// groups' communication is comm_seconds of their bytes. `layers` gives forward and backward times (their comm is
// ignored), `bytes` each layer's gradient bytes.
// The test is local, as in the reference code: when the saving exceeds every layer's backward time (a large alpha
// times 2(P-1)), each step merges and the whole model becomes one message after the backward pass, which can
// expose more than fixed-size buckets (bench/README.md: ResNet-50 on 32 GPUs at alpha 100 us, 59.0% against 84.8%).
MergedLayers merge_gradients_mgwfbp(const std::vector<LayerTimes>& layers, const std::vector<double>& bytes,
                                    const std::function<double(double)>& comm_seconds);

// The best grouping for the same objective (when the last group's communication ends), found exactly by dynamic
// programming over group boundaries instead of MG-WFBP's local test. Groups are consecutive layers sent in backward
// order on one channel; a group starts when its first-layer (input-side) gradient is ready and the channel is free.
// The finish time of a prefix only delays what follows, so the earliest finish of the layers L..j is
//   best(j) = min over groups k..j of  max(best(k+1), ready(k..j)) + comm_seconds(bytes of k..j)
// (k..j: layers k to j counted from the output side). O(L^2) evaluations of comm_seconds. Never worse than
// MG-WFBP, one message per layer or one message for the whole model (tested).
MergedLayers merge_gradients_optimal(const std::vector<LayerTimes>& layers, const std::vector<double>& bytes,
                                     const std::function<double(double)>& comm_seconds);

}  // namespace distsgd::sim
