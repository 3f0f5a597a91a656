#include "distsgd/experiment/profile_in_process.hpp"

#include <fstream>

#include "distsgd/core/error.hpp"
#include "distsgd/core/option.hpp"
#include "distsgd/experiment/self_command.hpp"
#include "distsgd/train/options.hpp"
#include "distsgd/train/profile_file.hpp"

namespace distsgd::experiment {

void profile_in_process(const std::vector<std::string>& command, const std::string& out, const std::string& log_path) {
  require(!command.empty() && command.front() == "profile", "profile_in_process: the words of distsgd profile");
  std::ofstream log(log_path);
  log << command_text(command) << "\n";
  // --repeats is profile's own; the other words are train's flags, parsed as the command line parses them.
  int64_t repeats = 0, ranks_at_once = 0;
  std::vector<std::string> train_words;
  for (size_t i = 1; i < command.size(); ++i) {
    if (command[i] != "--repeats" && command[i] != "--ranks-at-once") {
      train_words.push_back(command[i]);
      continue;
    }
    require(i + 1 < command.size(), "profile: " + command[i] + " needs a value");
    (command[i] == "--repeats" ? repeats : ranks_at_once) = parse_text<int64_t>(command[i], command[i + 1]);
    ++i;
  }
  require(repeats > 0, "profile_in_process: give --repeats");
  TrainConfig config;
  parse_option_words(train::train_options(), train_words, config);
  train::validate(config);
  log << train::write_measured_profile(config, repeats, ranks_at_once, out);
}

}  // namespace distsgd::experiment
