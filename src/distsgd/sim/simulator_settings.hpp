// What `distsgd simulate` is told: the algorithm and its settings, the worker counts, the fidelity and the
// discrete-event simulator's knobs. Declared once as options (core/option.hpp): the command line, and the harness
// (study, validate, advise, calibrate) that builds the same settings in-process from the same words, read one table.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "distsgd/core/option.hpp"
#include "distsgd/sim/algorithm_settings.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"

namespace distsgd::sim {

struct SimulatorSettings : AlgorithmSettings {
  std::string profile;
  std::string cluster = "10gbe";
  double bucket_mb = 25;
  double first_bucket_mb = 1;
  std::vector<int64_t> workers{1, 2, 4, 8, 16, 32};
  std::string out;  // JSON (none when empty)

  // The discrete-event fidelity (sim/des/discrete_event_simulator.hpp).
  std::string fidelity = "analytical";  // analytical | des
  int64_t seed = 1;
  double shared_cores = -1;                  // -1: the cluster's; 0: a processor per rank; N: every rank shares N cores
  std::string server_placement = "cluster";  // own_links | worker_nodes | cluster (the cluster's own figure)
  std::string compress = distsgd::name_of(catalog::defaults::kCompress);
  double density = 0.001;  // dgc
  int64_t rank = catalog::defaults::kPowerSgdRank;
  std::vector<std::string> slowdowns, compute_multipliers, link_multipliers;  // RANK:FACTOR
  double jitter_cv = 0;
  std::string jitter = "lognormal";
  double straggler_probability = 0;
  double straggler_factor = 4;
  int64_t straggler_iterations = 10;
  std::string trace;  // Chrome trace of the simulated run (des; none when empty)
};

using SimulatorOption = BasicOptionSpec<SimulatorSettings>;

// The cluster as the settings run it: --shared-cores and --server-placement where given.
ClusterDescription as_simulated(ClusterDescription cluster, const SimulatorSettings& settings);

// Every option of `distsgd simulate`, in --help's order.
const std::vector<SimulatorOption>& simulator_options();
// Whether the simulator takes `flag` (e.g. "--staleness"): the harness hands on only the flags it takes.
bool simulator_takes_flag(const std::string& flag);
// Every option's rule and the rules across options (a setting for another algorithm or fidelity); throws Error
// naming the flags. The profile is not read here.
void check(const SimulatorSettings& settings);
// The settings that `distsgd simulate WORDS...` would run ("--algo", "bsp", "--servers", "2", ...), checked; throws
// Error naming the words and what is wrong with them.
SimulatorSettings simulator_settings_from(const std::vector<std::string>& words);

}  // namespace distsgd::sim
