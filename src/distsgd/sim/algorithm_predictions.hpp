// Each algorithm's model, by its name in `distsgd train --algo`: the closed form that predicts it (analytical
// fidelity), the discrete-event simulator's workload (its protocol, des/workload.hpp) and the DES's settings for it,
// all from the simulator's settings.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "distsgd/sim/analytical/prediction.hpp"
#include "distsgd/sim/des/settings.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "distsgd/sim/platform/model_profile.hpp"
#include "distsgd/sim/simulator_settings.hpp"

namespace distsgd::sim {

class DesContext;
class Workload;

// The closed form of one worker count: the profile as it runs on the cluster (predict_analytical adjusts both).
using AnalyticalModel = std::function<Prediction(const SimulatorSettings&, const ModelProfile&,
                                                 const ClusterDescription&, int64_t workers)>;
// The algorithm's protocol in the discrete-event simulator, over the context's network and compute.
using WorkloadFactory = std::function<std::unique_ptr<Workload>(DesContext&)>;

struct AlgorithmModel {
  std::string name;  // --algo, as the catalogue names it
  AnalyticalModel analytical;
  WorkloadFactory workload;
  // The algorithm's own train flags that do not change the time of an iteration (a step's scale, a mixing weight):
  // the models need not see them, so a prediction holds whatever their values (the study predicts such runs).
  std::vector<std::string> timing_neutral_flags = {};
};

// An extension's algorithm (examples/extension/): both its models, registered before any command runs, beside its
// catalogue entry (catalog::register_algorithm, with `simulated`). A name already taken is refused.
void register_algorithm_model(AlgorithmModel model);
// The model of `name`, or null when the simulator has none (the single process, an unmodelled extension).
const AlgorithmModel* find_algorithm_model(const std::string& name);
// The model of `name`; throws distsgd::Error listing the predicted algorithms.
const AlgorithmModel& algorithm_model(const std::string& name);

// The algorithms the simulator predicts: the built-ins, then the registered ones.
std::vector<std::string> predicted_algorithms();

// The analytical prediction of one worker count, as `distsgd simulate` prints it: the profile as it runs on the
// cluster, its cores shared as the cluster says, the busy receivers' delay in every message.
// `bytes_per_iteration`: what a worker sends per iteration (communication_bytes_per_iteration), where the caller
// has it already; negative: counted here when the cluster needs it.
Prediction predict_analytical(const SimulatorSettings& settings, const ModelProfile& profile,
                              const ClusterDescription& cluster, int64_t workers, double bytes_per_iteration = -1);

// The bytes a worker sends per iteration (mean over the workers), counted by a short discrete-event run: they depend
// on the algorithm, its settings, the model and the workers, not on the cluster's figures.
double communication_bytes_per_iteration(const SimulatorSettings& settings, const ModelProfile& profile,
                                         const ClusterDescription& cluster, int64_t workers);

// The profile with ClusterDescription::communication_cpu_seconds_per_byte charged to its compute: where the ranks
// share the host's cores, each worker's forward, backward and update stretched by that cost of the bytes it sends
// and receives per iteration (twice what it sends: a worker of every algorithm here receives about what it sends).
// Unchanged on a cluster without shared cores or without the figure.
ModelProfile with_communication_cpu(const ModelProfile& profile, const ClusterDescription& cluster,
                                    double bytes_per_iteration);
// Whether `cluster` charges communication to the compute of a run of `workers` (with_communication_cpu).
bool charges_communication_cpu(const ClusterDescription& cluster, int64_t workers);

// The discrete-event simulator's settings for one worker count (checked).
DesSettings des_settings(const SimulatorSettings& settings, int64_t workers);

// " (overlap wfbp)", " (compress powersgd, rank 2)", " (base sgp)": what AR-SGD's (DiLoCo's, compressed; SlowMo's
// over SGP) line of simulate's table runs; empty for the others.
std::string variant_text(const SimulatorSettings& settings);

// Whether the algorithm exchanges with peers only (gossip, SGP, AD-PSGD, SlowMo over SGP): it needs two workers.
bool is_peer_to_peer(const SimulatorSettings& settings);

}  // namespace distsgd::sim
