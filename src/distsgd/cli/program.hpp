// The distsgd program as a function. src/distsgd/cli/main.cpp calls it, and so does an extension's own main after
// registering its algorithms (examples/extension/): then every command (train, simulate, study, validate, advise, ...)
// knows them, in this process and in every child it starts (forked ranks; study cells and validate's runs execute
// /proc/self/exe, the extension's program).
#pragma once

namespace distsgd::cli {

// Parses the command line and runs the command; returns the exit status (errors: one line on stderr, status 1).
int program_main(int argc, char** argv);

}  // namespace distsgd::cli
