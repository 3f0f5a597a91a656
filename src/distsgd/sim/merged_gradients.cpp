#include "distsgd/sim/merged_gradients.hpp"

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

}  // namespace

MergedLayers merge_gradients_mgwfbp(const std::vector<LayerTimes>& layers, const std::vector<double>& bytes,
                                    const std::function<double(double)>& comm_seconds) {
  require(!layers.empty() && layers.size() == bytes.size(), "MG-WFBP needs each layer's times and bytes");
  const std::size_t count = layers.size(), last = count - 1;
  // tau_b(L) = 0, tau_b(l) = tau_b(l+1) + t_b(l+1): when each layer's backward starts.
  std::vector<double> backward_start(count, 0);
  for (std::size_t l = last; l-- > 0;) backward_start[l] = backward_start[l + 1] + layers[l + 1].backward;

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

  MergedLayers merged;
  for (std::size_t l = 0; l < count; ++l) {
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

}  // namespace distsgd::sim
