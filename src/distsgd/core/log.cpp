#include "distsgd/core/log.hpp"

#include <iostream>
#include <mutex>

namespace distsgd::log {
namespace {
std::mutex mutex;
std::string prefix;
}  // namespace

void set_prefix(const std::string& p) {
  std::lock_guard<std::mutex> lock(mutex);
  prefix = p;
}

void info(const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex);
  std::cerr << prefix << line << '\n' << std::flush;
}

}  // namespace distsgd::log
