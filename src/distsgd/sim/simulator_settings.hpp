// What `distsgd simulate` is told: the algorithm and its settings, the worker counts, the fidelity and the
// discrete-event simulator's knobs. Declared once as options (core/option.hpp): the command line, and the harness
// (study, validate, advise, calibrate) that builds the same settings in-process from the same words, read one table.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "distsgd/core/option.hpp"

namespace distsgd::sim {

struct SimulatorSettings {
  std::string profile;
  std::string cluster = "10gbe";
  std::string algorithm = "arsgd";
  std::string overlap = "wfbp";  // arsgd: none, wfbp, mgwfbp, merge-optimal or multistep
  double bucket_mb = 25;
  double first_bucket_mb = 1;
  int64_t servers = 1;  // parameter-server algorithms
  int64_t staleness = 10;
  int64_t tau = 2;  // as distsgd train
  int64_t pi = 4;
  double gossip_probability = 0.01;      // gosgd
  int64_t sgp_overlap = 0;               // as distsgd train
  int64_t sync_every = 16;               // localsgd, slowmo, diloco (as distsgd train)
  std::string slowmo_base = "localsgd";  // slowmo: localsgd | sgp
  int64_t fragments = 1;                 // diloco
  int64_t fragment_delay = 0;
  int64_t outer_bits = 32;
  std::vector<int64_t> workers{1, 2, 4, 8, 16, 32};
  std::string out;  // JSON (none when empty)

  // The discrete-event fidelity (sim/des/discrete_event_simulator.hpp).
  std::string fidelity = "analytical";  // analytical | des
  int64_t iterations = 100;
  int64_t warmup = 10;
  int64_t seed = 1;
  int64_t prefetch = 4;
  std::string collectives = "auto";
  int64_t shared_cores = -1;  // -1: the cluster's; 0: a processor per rank; N: every rank shares N cores
  std::string sharding = "memory";
  std::string local_aggregation = "none";  // bsp: none | host
  std::string compress = "none";           // none | dgc | powersgd
  double density = 0.001;                  // dgc
  int64_t rank = 2;                        // powersgd
  int64_t powersgd_start = 10;             // powersgd (des)
  std::string aladdin_variant = "full";
  std::string gossip_mode = "pull";
  std::vector<std::string> slowdowns, compute_multipliers, link_multipliers;  // RANK:FACTOR
  double jitter_cv = 0;
  std::string jitter = "lognormal";
  double straggler_probability = 0;
  double straggler_factor = 4;
  int64_t straggler_iterations = 10;
  std::string trace;  // Chrome trace of the simulated run (des; none when empty)
};

using SimulatorOption = BasicOptionSpec<SimulatorSettings>;

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
