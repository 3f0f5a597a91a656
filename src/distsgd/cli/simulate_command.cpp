#include "distsgd/cli/simulate_command.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>

#include "distsgd/cli/declared_options.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "distsgd/sim/simulation.hpp"

namespace distsgd::cli {

CLI::App* add_simulate_command(CLI::App& app, sim::SimulatorSettings& settings) {
  auto* cmd = app.add_subcommand("simulate",
                                 "predict an algorithm's throughput and scaling efficiency for a profile (distsgd "
                                 "profile) on a cluster; analytical model or discrete-event simulation");
  add_declared_options(*cmd, sim::simulator_options(), settings);
  cmd->add_flag_callback(
      "--list-clusters",
      [] {
        std::cout << sim::describe_cluster_presets();
        throw CLI::Success();  // like --help: nothing else runs, and --profile is not needed
      },
      "print the cluster presets with their links and sources, and exit");
  return cmd;
}

int run_simulate(const sim::SimulatorSettings& c) {
  const auto document = sim::run_simulation(c, std::cout);
  if (!c.out.empty()) write_json_atomically(c.out, document);
  return 0;
}

}  // namespace distsgd::cli
