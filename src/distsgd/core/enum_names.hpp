// Enum values with their command-line names. An enum opts in by declaring, in its own namespace,
//   const EnumNames<E>& enum_names(E);
// (found by argument-dependent lookup); the flag parser, config.json and --help then read that one table, so a
// value is parsed from text once, where it enters, and travels as the enum.
#pragma once
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace distsgd {

template <class E>
using EnumNames = std::vector<std::pair<E, std::string>>;

template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
const std::string& name_of(E value) {
  for (const auto& [v, name] : enum_names(E{})) {
    if (v == value) return name;
  }
  static const std::string unknown = "?";
  return unknown;
}

template <class E>
std::optional<E> enum_from_name(const std::string& name) {
  for (const auto& [v, n] : enum_names(E{})) {
    if (n == name) return v;
  }
  return std::nullopt;
}

template <class E>
std::vector<std::string> enum_name_list() {
  std::vector<std::string> names;
  for (const auto& entry : enum_names(E{})) names.push_back(entry.second);
  return names;
}

}  // namespace distsgd
