#include "distsgd/sim/analytical/dag_model.hpp"

#include <algorithm>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {
namespace {

struct Sums {
  double forward = 0, backward = 0, comm = 0;
};

// How long a layer's communication takes when it starts at `start` and the worker computes until `compute_end`: at
// comm_computing's pace while the compute runs, at comm's after.
double comm_seconds(const LayerTimes& layer, double start, double compute_end) {
  const double computing = layer.comm_computing >= 0 ? layer.comm_computing : layer.comm;
  const double window = compute_end - start;
  if (window <= 0) return layer.comm;
  if (computing <= window) return computing;
  return window + (1 - window / computing) * layer.comm;
}

Sums sums(const std::vector<LayerTimes>& layers) {
  Sums s;
  for (const auto& layer : layers) {
    s.forward += layer.forward;
    s.backward += layer.backward;
    s.comm += layer.comm;
  }
  return s;
}

}  // namespace

double naive_iteration_seconds(const IterationInputs& in) {
  const Sums s = sums(in.layers);
  return in.io + in.h2d + s.forward + s.backward + s.comm + in.update;
}

double prefetched_iteration_seconds(const IterationInputs& in) {
  const Sums s = sums(in.layers);
  return std::max(in.io + in.h2d, s.forward + s.backward + s.comm + in.update);
}

// The spec's recurrence, walking from the last layer L down to 1 (index L-1 .. 0 here):
//   tau_b(L) = 0, tau_b(l) = tau_b(l+1) + t_b(l+1)                       backward start of layer l
//   tau_c(L) = t_b(L), tau_c(l) = max(tau_c(l+1) + t_c(l+1), tau_b(l) + t_b(l))   communication start of layer l
//   t_c_no = tau_c(1) + t_c(1) - t_b
// where t_c(l) runs at comm_computing's pace until the backward pass ends (t_b).
double wfbp_exposed_communication_seconds(const std::vector<LayerTimes>& layers) {
  require(!layers.empty(), "the DAG model needs at least one layer");
  const double backward_end = sums(layers).backward;
  const auto comm = [&](std::size_t l, double start) { return comm_seconds(layers[l], start, backward_end); };
  const std::size_t last = layers.size() - 1;
  double backward_start = 0;
  double comm_start = layers[last].backward;
  for (std::size_t l = last; l-- > 0;) {
    backward_start += layers[l + 1].backward;
    comm_start = std::max(comm_start + comm(l + 1, comm_start), backward_start + layers[l].backward);
  }
  return comm_start + comm(0, comm_start) - backward_end;
}

double wfbp_iteration_seconds(const IterationInputs& in) {
  const Sums s = sums(in.layers);
  return s.forward + s.backward + wfbp_exposed_communication_seconds(in.layers) + in.update;
}

double gathered_forward_exposed_seconds(const std::vector<LayerTimes>& layers) {
  require(!layers.empty(), "the DAG model needs at least one layer");
  double gather_end = layers[0].comm;
  double forward_start = gather_end;
  // The forward computes from the first gather's end for t_f at least (its own stalls aside).
  const double forward_end = gather_end + sums(layers).forward;
  for (std::size_t l = 1; l < layers.size(); ++l) {
    gather_end += comm_seconds(layers[l], gather_end, forward_end);
    forward_start = std::max(forward_start + layers[l - 1].forward, gather_end);
  }
  return forward_start + layers.back().forward - sums(layers).forward;
}

}  // namespace distsgd::sim
