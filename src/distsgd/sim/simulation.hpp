// A simulation as `distsgd simulate` runs it: every worker count of the settings predicted by the chosen fidelity
// (the closed forms, or the discrete-event simulator with its utilisation, staleness and trace), printed as a table
// and returned as the JSON document simulate's --out writes. The harness (study, validate, advise) calls it
// in-process, with the settings it parses from the same words (sim/simulator_settings.hpp).
#pragma once
#include <nlohmann/json.hpp>

#include <ostream>

#include "distsgd/sim/simulator_settings.hpp"

namespace distsgd::sim {

struct ClusterDescription;
struct ModelProfile;

// Reads the settings' profile and cluster; throws Error naming what is wrong (a rule, a file).
nlohmann::json run_simulation(const SimulatorSettings& settings, std::ostream& table);

// The discrete-event samples/s of `settings` at `workers` on `cluster`, the measured profile as run there (its compute
// scale and overhead, its communication's CPU), no trace: one row of run_simulation, for a caller that compares
// clusters (train --virtual's range over a calibration's clusters).
double des_samples_per_second(const SimulatorSettings& settings, const ModelProfile& measured_profile,
                              const ClusterDescription& cluster, int64_t workers);

}  // namespace distsgd::sim
