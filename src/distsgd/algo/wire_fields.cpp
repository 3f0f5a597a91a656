#include "distsgd/algo/wire_fields.hpp"

#include "distsgd/core/error.hpp"

#include <cmath>
#include <cstdio>

namespace distsgd::algo::wire {
namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

std::string hex(int64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

[[noreturn]] void fail(const Source& source, const char* field, double value, const std::string& expected) {
  throw Error("malformed " + source.describe() + ": field '" + field + "' is " + number(value) + ", expected " +
              expected + " (a corrupt message, or a process that is not a distsgd peer of this run)");
}

}  // namespace

std::string Source::describe() const { return peer >= 0 ? what + " from rank " + std::to_string(peer) : what; }

int64_t integer(const Source& source, const char* field, double value, int64_t low, int64_t high) {
  // The range test comes first and is written so that NaN fails it: converting an out-of-range double to an
  // integer is undefined behaviour.
  if (!(value >= static_cast<double>(low) && value <= static_cast<double>(high)) || value != std::floor(value)) {
    fail(source, field, value, "an integer in [" + std::to_string(low) + ", " + std::to_string(high) + "]");
  }
  return static_cast<int64_t>(value);
}

double real(const Source& source, const char* field, double value, double low, double high) {
  if (!(value >= low && value <= high))
    fail(source, field, value, "a number in [" + number(low) + ", " + number(high) + "]");
  return value;
}

void check_protocol(const Source& source, double magic, double version, int64_t expected_magic,
                    int64_t expected_version) {
  if (magic != static_cast<double>(expected_magic)) {
    throw Error("foreign " + source.describe() + ": magic number " + number(magic) + " is not distsgd's " +
                hex(expected_magic) + " (a process that is not a distsgd peer of this run, or a corrupt message)");
  }
  if (version != static_cast<double>(expected_version)) {
    throw Error(source.describe() + " speaks protocol version " + number(version) + ", this build speaks " +
                std::to_string(expected_version) + " (run the same distsgd build on every process)");
  }
}

}  // namespace distsgd::algo::wire
