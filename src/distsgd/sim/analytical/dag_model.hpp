// Shi et al.'s DAG model of one synchronous SGD iteration (spec/simulator.md, "The DAG model"), in closed form:
// per layer forward, backward and communication times; I/O, host-to-device copy and update around them.
#pragma once
#include <vector>

namespace distsgd::sim {

struct LayerTimes {
  double forward = 0;   // F_l
  double backward = 0;  // B_l, producing layer l's gradient
  double comm = 0;      // C_l, aggregating layer l's gradient across workers
  // C_l when it starts while the worker still computes (ClusterDescription::interference_alpha_seconds: computing and
  // communicating at once slow each other); < 0: as comm.
  double comm_computing = -1;
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
// Wait-free backprop: layer l's communication starts when its gradient is ready and the channel is free, and runs at
// comm_computing's pace until the backward pass ends, at comm's after. Returns the communication left after the
// backward pass ends (t_c_no).
double wfbp_exposed_communication_seconds(const std::vector<LayerTimes>& layers);
// t_f + t_b + t_c_no + t_u (I/O prefetched and hidden).
double wfbp_iteration_seconds(const IterationInputs& in);

// Lee et al.'s multistep, forward side (the mirror of wait-free backprop): every layer's parameter gather is queued
// on the channel when the forward pass may start, input layer first, and layer l's forward waits for its own
// gather only. Here `comm` is the gather. With gather end times g(1) = t_c(1), g(l) = g(l-1) + t_c(l) and forward
// start times phi(1) = g(1), phi(l) = max(phi(l-1) + t_f(l-1), g(l)), returns phi(L) + t_f(L) - t_f: how much
// longer the forward pass takes than its compute. Every gather but the first (which the forward waits for, idle)
// runs at comm_computing's pace until g(1) + t_f, when the forward would end without stalls.
double gathered_forward_exposed_seconds(const std::vector<LayerTimes>& layers);

}  // namespace distsgd::sim
