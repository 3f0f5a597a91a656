// `distsgd validate`: the simulator against measured runs (spec/simulator.md, "Validation"). For every configuration
// of a grid (algorithm x workers x network x straggler) it trains for a fixed number of iterations (`distsgd train`
// as a child process, the grid run as a study's cells: experiment/study_runner.hpp), profiles the model once per
// thread count and predicts the same configurations in this process (each fidelity asked for), and writes per
// configuration the predicted and measured samples/s and the error, and per algorithm the mean absolute percentage
// error (MAPE); with `holdout`, also the scores of a calibration on the smallest worker count.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "distsgd/core/config.hpp"
#include "distsgd/experiment/run_directory.hpp"

namespace distsgd::experiment {

struct ValidationSettings {
  TrainConfig config;                         // model, data, batch size, threads and seed of every run (train's flags)
  std::vector<std::string> model_flags;       // the model and data flags as given, handed to profile and train
  std::vector<std::string> train_only_flags;  // the data flags only train takes, as given
  std::vector<std::string> algorithms;        // default: all ten
  std::vector<int64_t> workers{2, 4};
  std::vector<std::string> networks{"loopback", "1gbit"};  // loopback, or a --net rate of distsgd train
  std::vector<std::string> stragglers{"none"};             // none, or RANK:FACTOR as train's --slowdown
  std::vector<std::string> fidelities{"analytical", "des"};
  std::vector<std::string> clusters;  // NETWORK=FILE|PRESET: the simulator's cluster for a network
  int64_t iterations = 200;
  int64_t warmup = kDefaultWarmupIterations;  // iterations of every worker left out of the measured throughput
  int64_t servers = 1;                        // of the parameter-server algorithms
  int64_t profile_repeats = 30;
  // Runs of every configuration: the measured throughput is their median, and the report says how far they agree
  // (the noise a prediction is judged against). The repeats run one after another over the whole grid.
  int64_t repeats = 1;
  double timeout = 120;  // train's --timeout
  bool holdout = false;  // also calibrate on the smallest worker count and score the other rows
  double noise = 0;      // with holdout: the measurements' relative noise for the ranges; 0: from the repeats, else 2%
  // With holdout: the fidelity that predicts the held-out rows on the calibrated cluster (the calibration itself fits
  // with the analytical models; rows with a straggler always take the discrete-event simulator).
  std::string holdout_fidelity = "analytical";
  std::string out;
};

// Runs (or resumes) the validation into settings.out; returns the exit status. Throws Error on bad settings (before
// anything runs), when interrupted, and when configurations failed (after writing validation.json).
int run_validation(const ValidationSettings& settings);

}  // namespace distsgd::experiment
