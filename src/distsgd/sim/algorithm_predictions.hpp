// Each algorithm's model, by its name in `distsgd train --algo`: the closed form that predicts it (analytical
// fidelity) and the discrete-event simulator's settings for it, both from the simulator's settings.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "distsgd/sim/analytical/prediction.hpp"
#include "distsgd/sim/des/settings.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "distsgd/sim/platform/model_profile.hpp"
#include "distsgd/sim/simulator_settings.hpp"

namespace distsgd::sim {

// The algorithms the simulator predicts.
std::vector<std::string> predicted_algorithms();

// The analytical prediction of one worker count, as `distsgd simulate` prints it: the profile as it runs on the
// cluster, its cores shared as the cluster says, the busy receivers' delay in every message.
Prediction predict_analytical(const SimulatorSettings& settings, const ModelProfile& profile,
                              const ClusterDescription& cluster, int64_t workers);

// The discrete-event simulator's settings for one worker count (checked).
DesSettings des_settings(const SimulatorSettings& settings, int64_t workers);

// " (overlap wfbp)", " (compress powersgd, rank 2)", " (base sgp)": what AR-SGD's (DiLoCo's, compressed; SlowMo's
// over SGP) line of simulate's table runs; empty for the others.
std::string variant_text(const SimulatorSettings& settings);

// Whether the algorithm exchanges with peers only (gossip, SGP, AD-PSGD, SlowMo over SGP): it needs two workers.
bool is_peer_to_peer(const SimulatorSettings& settings);

}  // namespace distsgd::sim
