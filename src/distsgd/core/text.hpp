// Small text helpers shared by error messages and --help.
#pragma once
#include <string>
#include <vector>

namespace distsgd {

// "a, b, c": lists of valid names in messages.
inline std::string join(const std::vector<std::string>& items, const std::string& separator = ", ") {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

}  // namespace distsgd
