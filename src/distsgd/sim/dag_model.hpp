// Shi et al.'s DAG model of one synchronous SGD iteration (spec/simulator.md, "The DAG model"), in closed form:
// per layer forward, backward and communication times; I/O, host-to-device copy and update around them.
#pragma once
#include <vector>

namespace distsgd::sim {

struct LayerTimes {
  double forward = 0;   // F_l
  double backward = 0;  // B_l, producing layer l's gradient
  double comm = 0;      // C_l, aggregating layer l's gradient across workers
};

struct IterationInputs {
  std::vector<LayerTimes> layers;  // l = 1..L in order (input first)
  double io = 0;                   // reading a batch (t_io)
  double h2d = 0;                  // host-to-device copy (t_h2d)
  double update = 0;               // t_u
};

// t_io + t_h2d + t_f + t_b + t_c + t_u: every task one after another.
double naive_iteration_seconds(const IterationInputs& in);
// max(t_io + t_h2d, t_f + t_b + t_c + t_u): the next batch is read while this one trains.
double prefetched_iteration_seconds(const IterationInputs& in);
// Wait-free backprop: layer l's communication starts when its gradient is ready and the channel is free. Returns the
// communication left after the backward pass ends (t_c_no).
double wfbp_exposed_communication_seconds(const std::vector<LayerTimes>& layers);
// t_f + t_b + t_c_no + t_u (I/O prefetched and hidden).
double wfbp_iteration_seconds(const IterationInputs& in);

}  // namespace distsgd::sim
