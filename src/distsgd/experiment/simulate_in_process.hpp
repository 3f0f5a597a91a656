// A prediction as `distsgd simulate` makes it, made in this process: study, validate and advise give the same words
// they would give the command, and get its JSON document and its log, without a child (and its libtorch start-up).
#pragma once
#include <string>
#include <vector>

namespace distsgd::experiment {

// `command` is {"simulate", flags...}. Writes simulate's --out document to `out` and, to `log_path` (replaced), the
// command line and simulate's table. Throws Error naming the words and what is wrong (a flag, a rule, a file).
void simulate_in_process(const std::vector<std::string>& command, const std::string& out, const std::string& log_path);

}  // namespace distsgd::experiment
