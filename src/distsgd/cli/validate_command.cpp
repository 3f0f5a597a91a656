#include "distsgd/cli/validate_command.hpp"

#include <CLI/CLI.hpp>

#include "distsgd/cli/given_flags.hpp"
#include "distsgd/cli/train_command.hpp"
#include "distsgd/experiment/algorithm_recipes.hpp"
#include "distsgd/experiment/forwarded_flags.hpp"

namespace distsgd::cli {

using experiment::kModelAndDataFlags;
using experiment::kTrainOnlyDataFlags;
using experiment::recipe_names;

CLI::App* add_validate_command(CLI::App& app, ValidateCommand& c) {
  auto* cmd = app.add_subcommand(
      "validate",
      "the simulator against measured runs: train a grid of configurations (algorithm x workers x network x "
      "straggler), profile the model, simulate the same configurations, and report predicted vs measured samples/s "
      "and the mean absolute percentage error per algorithm (DIR/validation.json); resumable");
  c.config.batch_size = 32;  // bench/README.md's emulated-cluster recipes
  auto flags = kModelAndDataFlags;
  flags.insert(flags.end(), kTrainOnlyDataFlags.begin(), kTrainOnlyDataFlags.end());
  flags.insert(flags.end(), {"--batch-size", "--threads"});
  add_train_options(*cmd, c.config, flags);
  cmd->get_option("--batch-size")->default_str("32");
  c.algorithms = recipe_names();
  cmd->add_option("--algos", c.algorithms, "algorithms, e.g. arsgd,asp (recipes as bench/README.md's emulated table)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--workers", c.workers, "worker counts, e.g. 2,4")->delimiter(',')->capture_default_str();
  cmd->add_option("--networks", c.networks,
                  "loopback (this host) and/or --net rates of distsgd train (e.g. 1gbit,100mbit: an emulated host "
                  "per rank, needs root or user namespaces; skipped with one line where it cannot be made)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--straggler", c.stragglers, "none and/or RANK:FACTOR (train's --slowdown), e.g. none,1:4")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option(
         "--fidelity", c.fidelities,
         "the simulator's fidelities to compare: analytical and/or des (used when distsgd simulate has it); each "
         "also gives a diagnostic (ana*, des*) from the run's own forward and backward times")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--cluster", c.clusters,
                  "NETWORK=FILE|PRESET: the simulator's cluster for a network (default: loopback fitted by distsgd "
                  "commbench here, RATE: the preset emulated-RATE)");
  cmd->add_option("--iterations", c.iterations, "iterations of every run")->capture_default_str();
  cmd->add_option("--warmup", c.warmup,
                  "iterations of every worker left out of the measured throughput (steady state from trace.json: "
                  "each worker from its iteration WARMUP on, while every worker trains)")
      ->capture_default_str();
  cmd->add_option("--servers", c.servers, "parameter servers of bsp, asp, ssp, easgd, aladdin")->capture_default_str();
  cmd->add_option("--repeats", c.repeats,
                  "runs of every configuration, the whole grid once per repeat: the measured samples/s is their "
                  "median, and the report gives how far the repeats agree (their Kendall's tau and spread: the "
                  "noise any prediction is judged against)")
      ->capture_default_str();
  cmd->add_option("--profile-repeats", c.profile_repeats, "timed iterations of distsgd profile")->capture_default_str();
  cmd->add_option("--timeout", c.timeout, "train's --timeout: seconds any communication may take")
      ->capture_default_str();
  cmd->add_flag(
      "--holdout", c.holdout,
      "also calibrate the simulator (distsgd calibrate) on each network's smallest worker count and score it "
      "on the other rows only: held-out MAPE per algorithm, and per worker count Kendall's tau between "
      "predicted and measured samples/s and whether the fastest algorithm was picked; rows with a --straggler are "
      "never calibrated on: they are held out and predicted by the discrete-event simulator on the "
      "calibrated cluster");
  cmd->add_option("--noise", c.noise,
                  "with --holdout: the measurements' relative noise (one standard deviation) for the range each "
                  "held-out row is judged against (distsgd calibrate --noise); default: from the calibration rows' "
                  "repeats (--repeats 2 or more), else 2%")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--holdout-fidelity", c.holdout_fidelity,
                  "with --holdout: what calibrates on the smallest worker count and predicts the held-out rows: "
                  "analytical (the closed forms; seconds) or des (the discrete-event simulator, as simulate "
                  "--fidelity des, the virtual cluster and the rows with a straggler predict; about half a minute a "
                  "network of 10 calibration rows on 2 cores)")
      ->check(CLI::IsMember({"analytical", "des"}))
      ->capture_default_str();
  cmd->add_option("--out", c.out, "directory of the runs, profiles, predictions and validation.json")->required();
  c.command = cmd;
  return cmd;
}

int run_validate(ValidateCommand& c) {
  c.model_flags = given_flags(*c.command, kModelAndDataFlags);
  c.train_only_flags = given_flags(*c.command, kTrainOnlyDataFlags);
  return experiment::run_validation(c);
}

}  // namespace distsgd::cli
