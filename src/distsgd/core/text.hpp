// Small text helpers shared by error messages and --help.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace distsgd {

// "a, b, c": lists of valid names in messages.
inline std::string join(const std::vector<std::string>& items, const std::string& separator = ", ") {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

// "a, b or c": the valid values of a flag in messages.
inline std::string join_or(const std::vector<std::string>& items) {
  if (items.size() < 2) return join(items);
  return join(std::vector<std::string>(items.begin(), items.end() - 1)) + " or " + items.back();
}

// "1x28x28": a sample's shape in messages and flags (--synthetic-shape, --input-shape); "(empty)" for none.
inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text;
  for (int64_t size : shape) text += (text.empty() ? "" : "x") + std::to_string(size);
  return text.empty() ? "(empty)" : text;
}

// "1,2,,4" split at ',' -> {"1", "2", "", "4"}.
inline std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts{""};
  for (const char c : text) {
    if (c == separator)
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}

}  // namespace distsgd
