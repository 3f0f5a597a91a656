#include "distsgd/sim/analytical/merged_gradients.hpp"

#include <algorithm>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {
namespace {

// The DAG model's communication start times (dag_model.cpp), index 0 the input layer:
// tau_c(L) = tau_b(L) + t_b(L), tau_c(l) = max(tau_c(l+1) + t_c(l+1), tau_b(l) + t_b(l)).
std::vector<double> comm_starts(const std::vector<double>& backward_start, const std::vector<LayerTimes>& layers,
                                const std::vector<double>& comm) {
  const std::size_t last = layers.size() - 1;
  std::vector<double> start(layers.size());
  start[last] = backward_start[last] + layers[last].backward;
  for (std::size_t l = last; l-- > 0;) {
    start[l] = std::max(start[l + 1] + comm[l + 1], backward_start[l] + layers[l].backward);
  }
  return start;
}

// Groups given by whether each layer (forward order) joins the group of the layer before it.
MergedLayers groups_from(const std::vector<LayerTimes>& layers, const std::vector<double>& bytes,
                         const std::vector<bool>& merged_into_previous,
                         const std::function<double(double)>& comm_seconds) {
  MergedLayers merged;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    if (l == 0 || !merged_into_previous[l]) {
      merged.layers.push_back({});
      merged.first_layer.push_back(l);
      merged.bytes.push_back(0);
    }
    merged.layers.back().forward += layers[l].forward;
    merged.layers.back().backward += layers[l].backward;
    merged.bytes.back() += bytes[l];
  }
  for (std::size_t g = 0; g < merged.layers.size(); ++g) merged.layers[g].comm = comm_seconds(merged.bytes[g]);
  return merged;
}

// tau_b(L) = 0, tau_b(l) = tau_b(l+1) + t_b(l+1): when each layer's backward starts.
std::vector<double> backward_starts(const std::vector<LayerTimes>& layers) {
  std::vector<double> start(layers.size(), 0);
  for (std::size_t l = layers.size() - 1; l-- > 0;) start[l] = start[l + 1] + layers[l + 1].backward;
  return start;
}

}  // namespace

MergedLayers merge_gradients_mgwfbp(const std::vector<LayerTimes>& layers, const std::vector<double>& bytes,
                                    const std::function<double(double)>& comm_seconds) {
  require(!layers.empty() && layers.size() == bytes.size(), "MG-WFBP needs each layer's times and bytes");
  const std::size_t count = layers.size(), last = count - 1;
  const std::vector<double> backward_start = backward_starts(layers);

  std::vector<double> group_bytes = bytes;  // at l: what layer l sends (0 once merged into l-1)
  std::vector<double> comm(count);
  for (std::size_t l = 0; l < count; ++l) comm[l] = comm_seconds(bytes[l]);
  std::vector<double> comm_start = comm_starts(backward_start, layers, comm);
  std::vector<bool> merged_into_previous(count, false);
  for (std::size_t l = last; l >= 1; --l) {
    const double previous_ready = backward_start[l - 1] + layers[l - 1].backward;
    if (previous_ready >= comm_start[l] + comm[l]) continue;  // l's communication is done before l-1 is ready
    // Negative when l's communication could not have started before l-1 is ready anyway: merging costs nothing.
    const double extra_wait = previous_ready - comm_start[l];
    const double merged_bytes = group_bytes[l - 1] + group_bytes[l];
    const double saved = comm[l - 1] + comm[l] - comm_seconds(merged_bytes);
    if (extra_wait >= saved) continue;
    group_bytes[l - 1] = merged_bytes;
    group_bytes[l] = 0;
    comm[l - 1] = comm_seconds(merged_bytes);
    comm[l] = 0;
    merged_into_previous[l] = true;
    comm_start = comm_starts(backward_start, layers, comm);
  }

  return groups_from(layers, bytes, merged_into_previous, comm_seconds);
}

MergedLayers merge_gradients_optimal(const std::vector<LayerTimes>& layers, const std::vector<double>& bytes,
                                     const std::function<double(double)>& comm_seconds) {
  require(!layers.empty() && layers.size() == bytes.size(), "the merge needs each layer's times and bytes");
  const std::size_t count = layers.size();
  const std::vector<double> backward_start = backward_starts(layers);
  // Walking from the output side: position i covers layers count-1 .. count-i (forward index). best[i] is the
  // earliest the channel can be done with the first i layers of backward; cut[i] where its last group starts.
  std::vector<double> best(count + 1, 0);
  std::vector<std::size_t> cut(count + 1, 0);
  for (std::size_t i = 1; i <= count; ++i) {
    const std::size_t input_side = count - i;  // the group's last layer in backward order: ready last
    const double ready = backward_start[input_side] + layers[input_side].backward;
    double group_bytes = 0;
    best[i] = -1;
    for (std::size_t k = i; k-- > 0;) {  // the group is backward positions k+1..i
      group_bytes += bytes[count - 1 - k];
      const double finish = std::max(best[k], ready) + comm_seconds(group_bytes);
      if (best[i] < 0 || finish < best[i]) {
        best[i] = finish;
        cut[i] = k;
      }
    }
  }
  std::vector<bool> merged_into_previous(count, true);
  for (std::size_t i = count; i > 0; i = cut[i]) {
    merged_into_previous[count - i] = false;  // the input-side layer of each group starts it (forward order)
  }
  return groups_from(layers, bytes, merged_into_previous, comm_seconds);
}

}  // namespace distsgd::sim
