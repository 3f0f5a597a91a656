// distsgd: the command-line program. `distsgd train ...` runs a training job; see `distsgd train --help`.
// `distsgd commbench ...` measures the communication primitives; see `distsgd commbench --help`.
#include "distsgd/cli/program.hpp"

#include "distsgd/cli/advise_command.hpp"
#include "distsgd/cli/calibrate_command.hpp"
#include "distsgd/cli/commbench.hpp"
#include "distsgd/cli/profile_command.hpp"
#include "distsgd/cli/report_command.hpp"
#include "distsgd/cli/simulate_command.hpp"
#include "distsgd/cli/study_command.hpp"
#include "distsgd/cli/train_command.hpp"
#include "distsgd/cli/validate_command.hpp"
#include "distsgd/comm/forked_main.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/memory_reuse.hpp"

#include <c10/util/Exception.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>

namespace {

void add_commbench_options(CLI::App& cmd, distsgd::cli::CommbenchConfig& c) {
  cmd.add_option("--processes", c.processes, "processes to start on this host (at least 2)")->capture_default_str();
  cmd.add_option("--min-kb", c.min_kb, "smallest message, KiB (sizes grow x4 from here)")->capture_default_str();
  cmd.add_option("--max-mb", c.max_mb, "largest message, MiB")->capture_default_str();
  cmd.add_option("--repeats", c.repeats,
                 "timed repeats per size up to 1 MiB; above, repeats * 1 MiB / size (at least 5)")
      ->capture_default_str();
  cmd.add_option("--timeout", c.timeout, "seconds any one operation may take before the run fails")
      ->capture_default_str();
  cmd.add_flag("!--no-send-recv", c.send_recv, "skip the rank 0 <-> rank 1 send/recv ping-pong");
  cmd.add_flag("--incast", c.incast, "also time ranks 1..P-1 sending to rank 0 at once (a parameter server's push)");
  cmd.add_flag("--busy-delivery", c.busy_delivery,
               "also time the rank 0 <-> 1 ping-pong while every rank computes: how late a message reaches a busy "
               "receiver, as quantiles (written to --cluster-out for the simulator's shared-core hosts)");
  cmd.add_option("--handover-from", c.handover_from,
                 "with --cluster-out: cluster files commbench wrote on this host at other process counts; their "
                 "allreduce fits and this run's give the hand-over per collective step at each count "
                 "(collective_handover: what a ring step costs more when more ranks share the cores)")
      ->delimiter(',');
  cmd.add_option("--out", c.out, "JSON file for the sizes, min and median times and the fits (written by rank 0)");
  cmd.add_option("--cluster-out", c.cluster_out,
                 "cluster JSON fitted from this run, for distsgd simulate --cluster (written by rank 0)");
  // The emulated cluster, as `distsgd train` takes it (see `distsgd train --help`).
  cmd.add_option("--net", c.network.net,
                 "measure over an emulated cluster whose links are these (e.g. 1gbit,delay=0.2ms)");
  cmd.add_option("--hosts", c.network.hosts, "emulated hosts (0: one per process)")->capture_default_str();
  cmd.add_option("--placement", c.network.placement, "processes to hosts: round-robin or block")->capture_default_str();
  cmd.add_option("--link", c.network.links,
                 "override one link: rankN= (or workerN=) or hostN= and a --net description (repeatable)");
}

int report(const std::string& what) {
  std::cerr << "distsgd: error: " << what << std::endl;
  return 1;
}

// CLI11's message on one line, and where the valid flags are listed.
std::string parse_error_line(std::string message) {
  std::replace(message.begin(), message.end(), '\n', ' ');
  while (!message.empty() && message.back() == ' ') message.pop_back();
  return message + " (distsgd --help lists the commands, distsgd COMMAND --help their flags)";
}

int run_program(int argc, char** argv) {
  try {
    CLI::App app{"distsgd: distributed SGD algorithms on one engine, compared side by side"};
    app.require_subcommand(1);
    app.set_help_all_flag("--help-all", "help of every command");

    distsgd::TrainConfig config;
    auto* train = distsgd::cli::add_train_command(app, config);

    distsgd::cli::CommbenchConfig commbench_config;
    auto* commbench = app.add_subcommand(
        "commbench",
        "time allreduce_sum (and send/recv, incast) of 4 KiB..64 MiB messages over N local processes (or an "
        "emulated cluster: --net); fit "
        "t(m) = alpha + beta*m to each size's fastest repeat");
    add_commbench_options(*commbench, commbench_config);

    distsgd::cli::ProfileCommand profile_command;
    auto* profile = distsgd::cli::add_profile_command(app, profile_command);
    distsgd::sim::SimulatorSettings simulate_command;
    auto* simulate = distsgd::cli::add_simulate_command(app, simulate_command);
    distsgd::cli::CalibrateCommand calibrate_command;
    auto* calibrate = distsgd::cli::add_calibrate_command(app, calibrate_command);
    distsgd::cli::StudyCommand study_command;
    auto* study = distsgd::cli::add_study_command(app, study_command);
    distsgd::cli::ReportCommand report_command;
    auto* report_subcommand = distsgd::cli::add_report_command(app, report_command);
    distsgd::cli::ValidateCommand validate_command;
    auto* validate = distsgd::cli::add_validate_command(app, validate_command);
    distsgd::cli::AdviseCommand advise_command;
    auto* advise = distsgd::cli::add_advise_command(app, advise_command);

    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      // --help and --help-all print their text and succeed; any other parse error (an unknown flag, a missing
      // value, no subcommand) is one line and status 1, as every other error (CLI11's own exit codes are 106-114).
      if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
      return report(parse_error_line(e.what()));
    }
    if (train->parsed()) return distsgd::cli::run_train(config, *train, argc, argv);
    if (commbench->parsed()) return distsgd::cli::run_commbench(commbench_config, argc, argv);
    if (profile->parsed()) return distsgd::cli::run_profile(profile_command);
    if (simulate->parsed()) return distsgd::cli::run_simulate(simulate_command);
    if (calibrate->parsed()) return distsgd::cli::run_calibrate(calibrate_command);
    if (study->parsed()) return distsgd::cli::run_study(study_command);
    if (report_subcommand->parsed()) return distsgd::cli::run_report(report_command);
    if (validate->parsed()) return distsgd::cli::run_validate(validate_command);
    if (advise->parsed()) return distsgd::cli::run_advise(advise_command);
    return 0;
  } catch (const distsgd::Error& e) {
    return report(e.what());
  } catch (const c10::Error& e) {
    return report(e.what_without_backtrace());
  } catch (const std::exception& e) {
    return report(e.what());
  }
}

}  // namespace

namespace distsgd::cli {

int program_main(int argc, char** argv) {
  keep_freed_memory_for_reuse();
  // The ranks `train --workers N` starts run this main in a fork of the launcher, without exec (comm/forked_main.hpp).
  distsgd::comm::register_program_main(run_program);
  return run_program(argc, argv);
}

}  // namespace distsgd::cli
