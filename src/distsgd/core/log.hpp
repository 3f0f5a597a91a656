// Progress and diagnostics go to stderr, prefixed with the process role; results go to stdout.
#pragma once
#include <string>

namespace distsgd::log {

// Prefix for every line this process prints to stderr, e.g. "[rank 2] ". Empty for a single process.
void set_prefix(const std::string& prefix);

// Writes one line to stderr, whole (lines of concurrent threads never interleave).
void info(const std::string& line);

}  // namespace distsgd::log
