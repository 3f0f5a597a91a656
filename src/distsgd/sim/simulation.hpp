// A simulation as `distsgd simulate` runs it: every worker count of the settings predicted by the chosen fidelity
// (the closed forms, or the discrete-event simulator with its utilisation, staleness and trace), printed as a table
// and returned as the JSON document simulate's --out writes. The harness (study, validate, advise) calls it
// in-process, with the settings it parses from the same words (sim/simulator_settings.hpp).
#pragma once
#include <nlohmann/json.hpp>

#include <ostream>

#include "distsgd/sim/simulator_settings.hpp"

namespace distsgd::sim {

// Reads the settings' profile and cluster; throws Error naming what is wrong (a rule, a file).
nlohmann::json run_simulation(const SimulatorSettings& settings, std::ostream& table);

}  // namespace distsgd::sim
