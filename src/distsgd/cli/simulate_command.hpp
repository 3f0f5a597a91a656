// `distsgd simulate`: predicted iteration time, throughput and scaling efficiency of an algorithm for a model
// profile on a cluster, over a list of worker counts. Analytical fidelity only (the
// discrete-event one is to come).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace distsgd::cli {

struct SimulateCommand {
  std::string profile;
  std::string cluster = "10gbe";
  std::string algorithm = "arsgd";
  std::string overlap = "wfbp";  // arsgd: none, wfbp, mgwfbp or multistep
  double bucket_mb = 25;
  double first_bucket_mb = 1;
  int64_t servers = 1;  // parameter-server algorithms
  int64_t staleness = 10;
  int64_t tau = 1;
  int64_t pi = 4;
  double gossip_probability = 0.01;  // gosgd
  int64_t sgp_overlap = 1;
  std::vector<int64_t> workers{1, 2, 4, 8, 16, 32};
  std::string out;  // JSON (none when empty)
};

CLI::App* add_simulate_command(CLI::App& app, SimulateCommand& command);
int run_simulate(const SimulateCommand& command);

}  // namespace distsgd::cli
