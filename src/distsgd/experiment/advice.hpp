// `distsgd advise`: ranks the algorithms for a cluster by predicted time to a target accuracy,
//   time = (samples the algorithm needs to reach the target, measured in short real runs at small scale on this host)
//          / (its throughput at N workers on the cluster, predicted by `distsgd simulate`).
// The short runs (`--measure-convergence`) are a study's cells in DIR/convergence (DIR/virtual); without them,
// and without a target, it ranks by predicted throughput alone and says so.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "distsgd/core/config.hpp"

namespace distsgd::experiment {

struct AdviceSettings {
  std::string profile;
  std::string cluster;
  int64_t workers = 0;
  double target_accuracy = 0;  // 0: none, rank by throughput
  double target_loss = 0;      // instead of an accuracy: a test loss to reach (a language model's); 0: none
  bool measure_convergence = false;
  // Train each algorithm as a virtual cluster at `workers` on `cluster` (train --virtual) and rank by its virtual
  // time to the target: the samples needed at N workers, not at convergence_workers.
  bool virtual_cluster = false;
  int64_t evals_per_epoch = 4;           // of the virtual runs: the finer the curve, the closer the interpolated time
  TrainConfig config;                    // model and data of the convergence runs (train's flags)
  std::vector<std::string> model_flags;  // the model and data flags as given, handed to the runs
  std::vector<std::string> train_only_flags;  // the data flags only train takes, as given
  std::vector<std::string> algorithms;        // default: all ten
  int64_t convergence_workers = 4;
  int64_t convergence_epochs = 2;
  int64_t servers = 1;  // of the parameter-server algorithms, in the runs and the predictions
  std::string fidelity = "analytical";
  std::string dir = "advise";
};

// Ranks (after running what is asked), writes DIR/advice.json and prints the table; returns the exit status. Throws
// Error on bad settings, before anything runs, and when interrupted.
int run_advice(const AdviceSettings& settings);

// What a run must reach: a test accuracy (at least) or a test loss (at most).
struct ProgressTarget {
  std::string metric = "test_accuracy";  // or "test_loss"
  double value = 0;
  bool lower_is_better() const { return metric == "test_loss"; }
  std::string text() const;  // "target accuracy 0.85", "target loss 2.1"
};
// The command's --target-loss when given, else its --target-accuracy (value 0: none).
ProgressTarget target_of(const AdviceSettings& settings);

// Samples (over all workers) a run took to first reach `target` test accuracy (or loss), from its evaluations
// (metrics.jsonl, in order): linear between the last evaluation below the target and the first at or above it; when
// the first evaluation already reaches it, that evaluation's samples (an upper bound, flagged). `measure` is the
// field interpolated: "samples", or "wall_seconds" for a virtual run's time to the target.
struct SamplesToTarget {
  std::optional<double> samples;  // none: not reached
  bool upper_bound = false;       // reached by the first evaluation
  double best_accuracy = 0;       // over the run
  double best_loss = 0;           // the lowest test loss over the run (0: none evaluated)
  double samples_evaluated = 0;   // at the last evaluation
};
SamplesToTarget samples_to_target(const std::vector<nlohmann::json>& evaluations, double target,
                                  const std::string& measure = "samples");
SamplesToTarget samples_to_target(const std::vector<nlohmann::json>& evaluations, const ProgressTarget& target,
                                  const std::string& measure = "samples");

}  // namespace distsgd::experiment
