#include "distsgd/experiment/profile_in_process.hpp"

#include <fstream>

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/core/option.hpp"
#include "distsgd/experiment/self_command.hpp"
#include "distsgd/train/options.hpp"
#include "distsgd/train/profile_file.hpp"

namespace distsgd::experiment {

void profile_in_process(const std::vector<std::string>& command, const std::string& out, const std::string& log_path) {
  require(!command.empty() && command.front() == "profile", "profile_in_process: the words of distsgd profile");
  std::ofstream log(log_path);
  log << command_text(command) << "\n";
  TrainConfig config;
  int64_t repeats = 20;  // as distsgd profile
  for (size_t i = 1; i < command.size();) {
    const std::string& flag = command[i];
    require(flag.rfind("--", 0) == 0, "profile: '" + flag + "' is not a flag");
    std::vector<std::string> values;
    for (++i; i < command.size() && command[i].rfind("--", 0) != 0; ++i) values.push_back(command[i]);
    if (flag == "--repeats") {
      require(values.size() == 1, "profile: --repeats takes one value");
      repeats = parse_text<int64_t>("--repeats", values[0]);
    } else {
      train::set_option(config, flag, values);
    }
  }
  train::validate(config);
  const auto measured = train::measure_profile(config, repeats);
  write_json_atomically(out, train::measured_profile_json(measured));
  log << train::measured_profile_text(measured, out);
}

}  // namespace distsgd::experiment
