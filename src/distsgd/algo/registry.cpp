#include "distsgd/algo/algorithm.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"

namespace distsgd::algo {

const AlgorithmInfo& find_algorithm(const std::string& name) {
  for (const auto& info : builtin_algorithms()) {
    if (info.name == name) return info;
  }
  throw Error("unknown algorithm '" + name + "'; valid: " + join(registered_algorithm_names()));
}

std::vector<std::string> registered_algorithm_names() {
  return algorithm_names_where([](const AlgorithmInfo&) { return true; });
}

std::vector<std::string> algorithm_names_where(const std::function<bool(const AlgorithmInfo&)>& has_capability) {
  std::vector<std::string> names;
  for (const auto& info : builtin_algorithms()) {
    if (has_capability(info)) names.push_back(info.name);
  }
  return names;
}

}  // namespace distsgd::algo
