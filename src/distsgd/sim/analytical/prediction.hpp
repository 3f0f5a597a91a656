// What every model of the simulator predicts, and the one way an iteration time becomes throughput and efficiency.
#pragma once
#include <cstdint>

#include "distsgd/sim/platform/cluster_description.hpp"
#include "distsgd/sim/platform/model_profile.hpp"

namespace distsgd::sim {

struct Prediction {
  double iteration_seconds = 0;              // per worker
  double exposed_communication_seconds = 0;  // iteration time beyond the compute of one worker alone
  double samples_per_second = 0;             // all workers
  double scaling_efficiency = 0;             // throughput over workers x one worker's throughput without comm.
};

// One worker alone: forward, backward and the update (the data is read ahead by the loader).
double compute_seconds(const ModelProfile& profile);

// The whole model (or gradient) over one worker's link: alpha + m / B_worker.
double model_transfer_seconds(const ModelProfile& profile, const ClusterDescription& cluster);

// The profile with every forward, backward and update time multiplied by `factor`.
ModelProfile with_compute_stretched(ModelProfile profile, double factor);

// The profile as it runs on `cluster`: compute stretched by the cluster's compute_scale, and its per-iteration
// overhead added to the first layer's forward (serial work that nothing overlaps, in every model and the DES alike).
// A cluster without calibration figures gives the profile back unchanged.
ModelProfile as_run_on(ModelProfile profile, const ClusterDescription& cluster);

// A parameter server's processing time for `requests` requests carrying `bytes` in all (cluster figures).
double server_processing_seconds(const ClusterDescription& cluster, double requests, double bytes);

// From a worker's iteration time (never faster than reading its batch) to the prediction.
Prediction prediction_from_iteration(const ModelProfile& profile, int64_t workers, double iteration_seconds);

}  // namespace distsgd::sim
