// When each worker of a run of independent workers (catalog: independent_workers, e.g. ASP, EASGD, gossip) starts its
// first iteration, in both engines (the discrete-event simulator and the virtual cluster).
//
// Why: measured runs of such algorithms settle with their workers at spread phases of the iteration (session 38's
// phase histograms from the runs' traces: a median phase difference of 0.52 of a cycle at 2 workers, uniform at 4-8),
// because the processes start apart and a shared server serves one message at a time. A simulation is deterministic
// and a fairly shared link keeps whatever offsets the workers start with: started together, its workers stay in
// lock-step, push through the server's link together and wait twice as long for the reply as the runs do (the DES's
// 2-worker ASP cell on 1gbit: 8.6 ms against the run's 4.6-4.8 ms). Starting worker w at w/W of one iteration (its
// compute and its exchange of the model both ways on its own link) reproduces the measured steady state.
// Synchronous algorithms start together: their first exchange lines them up anyway.
#pragma once
#include <cstdint>
#include <string>

#include "distsgd/sim/platform/cluster_description.hpp"
#include "distsgd/sim/platform/model_profile.hpp"

namespace distsgd::sim {

// One worker's iteration alone on the cluster: reading a batch, forward, backward, and the model's bytes sent and
// received over its link.
double lone_iteration_seconds(const ModelProfile& profile, const ClusterDescription& cluster);
// Worker `worker` of `workers` starts its first iteration this long after the run starts: w/W of a lone iteration
// where `algorithm`'s workers are independent (the catalogue says), 0 otherwise.
double first_iteration_start_seconds(const std::string& algorithm, const ModelProfile& profile,
                                     const ClusterDescription& cluster, int64_t worker, int64_t workers);

}  // namespace distsgd::sim
