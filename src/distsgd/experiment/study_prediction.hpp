// The simulator's prediction for each cell of a study: the same configuration (algorithm, its settings, workers,
// servers) on a cluster description of the cell's network, from a profile of its model at its batch size and thread
// count. `distsgd profile` and `distsgd simulate` run as child commands, as a user would run them (the settings handed
// on are the ones sim::simulator_options() declares, a compile-time list, not read from --help); their outputs stay
// under DIR/simulation/ and are reused while the command that made them is the same. The analytical fidelity is asked
// first; where it refuses a configuration (a straggler, compression), the discrete-event one (--fidelity des).
#pragma once
#include "distsgd/experiment/study_grid.hpp"
#include "distsgd/experiment/study_spec.hpp"

#include <map>
#include <string>
#include <vector>

namespace distsgd::experiment {

struct CellPrediction {
  bool available = false;
  double samples_per_second = 0;
  double iteration_seconds = 0;
  double scaling_efficiency = 0;
  double exposed_communication_seconds = 0;
  // On a calibrated cluster file (calibrate --noise): the lowest and highest samples/s of the clusters that fit its
  // points within their noise; both 0 without.
  double samples_per_second_low = 0, samples_per_second_high = 0;
  std::string cluster;   // the preset or cluster file simulated
  std::string fidelity;  // as `distsgd simulate` reports it
  std::string note;      // why there is no prediction
};

// Predictions by cell id. Never throws for a cell it cannot predict: the note says why.
std::map<std::string, CellPrediction> predict_cells(const std::vector<StudyCell>& cells, const SimulationSpec& spec,
                                                    const std::string& study_dir);

// The cluster the simulator models a cell's --net with: simulate.clusters of the spec, else the measured preset of
// an emulated network (emulated-1gbit, emulated-100mbit), else a description derived from the link's rate and delay
// (written to `study_dir`/simulation/). Empty, with `note` saying why, when there is none (loopback, unshaped).
std::string cluster_for_network(const TrainConfig& config, const SimulationSpec& spec, const std::string& study_dir,
                                std::string& note);

}  // namespace distsgd::experiment
