// The discrete-event fidelity of distsgd's simulator (spec/simulator.md, "Two fidelities" 2): runs every worker's
// training loop, the algorithm's communication and its servers over a flow-level network, for warm-up plus measured
// iterations, and reports what a run would measure. Deterministic for a seed. Needed where the analytical model is not:
// asynchronous algorithms, stragglers, contention (PS incast, gossip hot spots, shared node links).
#pragma once
#include "distsgd/sim/des/settings.hpp"
#include "distsgd/sim/des/statistics.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "distsgd/sim/platform/model_profile.hpp"

namespace distsgd::sim {

// Throws Error for settings out of range (check(settings)), and when a simulated algorithm deadlocks. With
// settings.trace_path, also writes the Chrome trace of the whole run there.
DesResult simulate_discrete_events(const ModelProfile& profile, const ClusterDescription& cluster,
                                   const DesSettings& settings);

}  // namespace distsgd::sim
