// The one exception type for user-facing failures: its message is printed as is, then the program exits non-zero.
#pragma once
#include <stdexcept>
#include <string>

namespace distsgd {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Throws Error(message) when the condition is false.
inline void require(bool condition, const std::string& message) {
  if (!condition) throw Error(message);
}

}  // namespace distsgd
