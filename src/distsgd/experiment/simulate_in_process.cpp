#include "distsgd/experiment/simulate_in_process.hpp"

#include <fstream>

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/experiment/self_command.hpp"
#include "distsgd/sim/simulation.hpp"
#include "distsgd/sim/simulator_settings.hpp"

namespace distsgd::experiment {

void simulate_in_process(const std::vector<std::string>& command, const std::string& out, const std::string& log_path) {
  require(!command.empty() && command.front() == "simulate", "simulate_in_process: the words of distsgd simulate");
  std::ofstream log(log_path);
  log << command_text(command) << "\n";
  const std::vector<std::string> words(command.begin() + 1, command.end());
  write_json_atomically(out, sim::run_simulation(sim::simulator_settings_from(words), log));
}

}  // namespace distsgd::experiment
