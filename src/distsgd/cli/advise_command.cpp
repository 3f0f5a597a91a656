#include "distsgd/cli/advise_command.hpp"

#include <CLI/CLI.hpp>

#include "distsgd/cli/given_flags.hpp"
#include "distsgd/cli/train_command.hpp"
#include "distsgd/experiment/algorithm_recipes.hpp"
#include "distsgd/experiment/forwarded_flags.hpp"

namespace distsgd::cli {

using experiment::kModelAndDataFlags;
using experiment::kTrainOnlyDataFlags;
using experiment::recipe_names;

CLI::App* add_advise_command(CLI::App& app, AdviseCommand& c) {
  auto* cmd = app.add_subcommand(
      "advise",
      "rank the algorithms for a cluster by predicted time to a target accuracy: samples to the target (short real "
      "runs here, --measure-convergence, cached in --dir) / throughput at --workers on --cluster (distsgd simulate)");
  cmd->add_option("--profile", c.profile, "profile JSON written by distsgd profile")->required();
  cmd->add_option("--cluster", c.cluster, "cluster JSON file or preset, as distsgd simulate takes it")->required();
  cmd->add_option("--workers", c.workers, "workers of the cluster to advise for")->required();
  cmd->add_option("--target-accuracy", c.target_accuracy, "test accuracy to reach (0: rank by throughput alone)")
      ->capture_default_str();
  cmd->add_option("--target-loss", c.target_loss,
                  "instead: test loss to reach, at most (a language model's: bits per byte x ln 2; 0: none)")
      ->capture_default_str();
  cmd->add_flag("--measure-convergence", c.measure_convergence,
                "run the short training runs that measure the samples each algorithm needs (a finished one is reused)");
  c.algorithms = recipe_names();
  cmd->add_option("--algos", c.algorithms, "algorithms to rank (recipes as bench/README.md's emulated table)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_flag("--virtual", c.virtual_cluster,
                "train each algorithm as a virtual cluster of --workers on --cluster (distsgd train --virtual, compute "
                "timed by --profile) and rank by its virtual time to --target-accuracy: accuracy at N workers, not "
                "carried over from --convergence-workers");
  cmd->add_option("--evals-per-epoch", c.evals_per_epoch, "--virtual: evaluations per epoch of each virtual run")
      ->capture_default_str();
  cmd->add_option("--convergence-workers", c.convergence_workers, "workers of the convergence runs on this host")
      ->capture_default_str();
  cmd->add_option("--convergence-epochs", c.convergence_epochs, "epochs of each convergence run")
      ->capture_default_str();
  cmd->add_option("--servers", c.servers, "parameter servers of bsp, asp, ssp, easgd, aladdin")->capture_default_str();
  cmd->add_option("--fidelity", c.fidelity, "the simulator's fidelity: analytical or des (when simulate has it)")
      ->capture_default_str();
  cmd->add_option("--dir", c.dir, "directory of the convergence runs, predictions and advice.json")
      ->capture_default_str();
  auto flags = kModelAndDataFlags;
  flags.insert(flags.end(), kTrainOnlyDataFlags.begin(), kTrainOnlyDataFlags.end());
  add_train_options(*cmd, c.config, flags);
  c.command = cmd;
  return cmd;
}

int run_advise(AdviseCommand& c) {
  c.model_flags = given_flags(*c.command, kModelAndDataFlags);
  c.train_only_flags = given_flags(*c.command, kTrainOnlyDataFlags);
  return experiment::run_advice(c);
}

}  // namespace distsgd::cli
