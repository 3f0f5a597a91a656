// A measured profile as `distsgd profile` makes it, made in this process: the study gives the words it would give the
// command (the model and data flags, --batch-size, --threads, --repeats) and gets the same file and table, without a
// child and its libtorch start-up. The measurement runs on this process's threads (the study itself computes
// nothing meanwhile).
#pragma once
#include <string>
#include <vector>

namespace distsgd::experiment {

// `command` is {"profile", flags...} (train's model and data flags, --batch-size, --threads, and --repeats, which it
// needs; --ranks-at-once K as the command has it). Writes the
// profile to `out` and, to `log_path` (replaced), the command line and profile's table. Throws Error naming what is
// wrong (a flag, a rule, a dataset).
void profile_in_process(const std::vector<std::string>& command, const std::string& out, const std::string& log_path);

}  // namespace distsgd::experiment
