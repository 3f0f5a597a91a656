// `distsgd calibrate`: the unknowns of a cluster description fitted to measured throughput (run directories of
// distsgd, or a CSV typed from another system's logs or a paper), so that simulate, study, advise and the virtual
// cluster predict with them (sim/calibration/calibration.hpp says how; README "Calibrating for your cluster").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "distsgd/experiment/run_directory.hpp"
#include "distsgd/sim/calibration/calibration.hpp"
#include "distsgd/sim/platform/model_profile.hpp"

namespace CLI {
class App;
}

namespace distsgd::cli {

struct CalibrateCommand {
  std::string points;             // CSV: algorithm,workers,samples_per_second[,flags]
  std::vector<std::string> runs;  // run directories (summary.json and config.json)
  std::string profile;
  std::string cluster = "10gbe";        // the base: a preset or a file
  std::vector<std::string> fit;         // the unknowns to fit; empty: those the points determine
  std::string out;                      // the calibrated cluster description (JSON)
  double noise = 0.02;                  // the points' relative noise: the fitted unknowns' ranges; 0: none
  std::string allreduce_latency;        // ring | tree; empty: the base's
  std::string server_placement;         // own_links | worker_nodes; empty: the base's
  std::string fidelity = "analytical";  // the model fitted: analytical | des
  int64_t iterations = 0;               // des: simulated iterations per point (0: DesPointOptions's)
  int64_t warmup = experiment::kDefaultWarmupIterations;  // --runs with trace.json: iterations not timed
};

CLI::App* add_calibrate_command(CLI::App& app, CalibrateCommand& command);
int run_calibrate(const CalibrateCommand& command);

}  // namespace distsgd::cli
