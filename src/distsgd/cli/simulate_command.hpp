// `distsgd simulate`: predicted iteration time, throughput and scaling efficiency of an algorithm for a model
// profile on a cluster, over a list of worker counts, by the analytical models (closed forms) or the discrete-event
// simulator (--fidelity des: contention, asynchrony, heterogeneity, a Chrome trace).
#pragma once
#include "distsgd/sim/simulator_settings.hpp"

namespace CLI {
class App;
}

namespace distsgd::cli {

// The simulate subcommand over the simulator's declared options (sim/simulator_settings.hpp), plus
// --list-clusters. `settings` must outlive the parse.
CLI::App* add_simulate_command(CLI::App& app, sim::SimulatorSettings& settings);
int run_simulate(const sim::SimulatorSettings& settings);

}  // namespace distsgd::cli
