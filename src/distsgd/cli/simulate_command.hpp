// `distsgd simulate`: predicted iteration time, throughput and scaling efficiency of an algorithm for a model
// profile on a cluster, over a list of worker counts, by the analytical models (closed forms) or the discrete-event
// simulator (--fidelity des: contention, asynchrony, heterogeneity, a Chrome trace).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "distsgd/sim/cluster_description.hpp"
#include "distsgd/sim/model_profile.hpp"
#include "distsgd/sim/prediction.hpp"

namespace CLI {
class App;
}

namespace distsgd::cli {

struct SimulateCommand {
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

  // The discrete-event fidelity (sim/discrete_event_simulator.hpp).
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

CLI::App* add_simulate_command(CLI::App& app, SimulateCommand& command);
int run_simulate(const SimulateCommand& command);

// In-process, for calibrate: the analytical prediction of one worker count, as run_simulate prints it (the
// profile as it runs on the cluster, its cores shared as the cluster says).
sim::Prediction predict_analytical(const SimulateCommand& command, const sim::ModelProfile& profile,
                                   const sim::ClusterDescription& cluster, int64_t workers);
// simulate's settings from its own flags ("--algo", "bsp", "--servers", "2", ...); throws Error naming the flags.
SimulateCommand simulate_command_from(const std::vector<std::string>& args);
// Whether `distsgd simulate` takes `flag` (e.g. "--staleness"): asked of its option table, not its --help text.
bool simulate_takes_flag(const std::string& flag);

}  // namespace distsgd::cli
