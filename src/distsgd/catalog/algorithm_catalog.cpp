#include "distsgd/catalog/algorithm_catalog.hpp"

#include <algorithm>
#include <utility>

#include "distsgd/core/error.hpp"

namespace distsgd::catalog {
namespace {

std::deque<AlgorithmEntry>& entries() {
  using F = Family;
  // name, family, needs servers, models differ, independent workers, workers update, outer loop, simulated
  static std::deque<AlgorithmEntry> all = {
      {"sgd", F::kSingleProcess, false, false, false, true, false, false},
      {"arsgd", F::kSynchronous, false, false, false},
      {"bsp", F::kSynchronous, true, false, false, false},
      {"asp", F::kAsynchronous, true, false, true, false},
      {"ssp", F::kAsynchronous, true, false, true},
      {"easgd", F::kAsynchronous, true, false, true},
      {"aladdin", F::kAsynchronous, true, false, true},
      {"gosgd", F::kDecentralized, false, true, true},
      {"gossip", F::kDecentralized, false, true, true},
      {"adpsgd", F::kDecentralized, false, true, true},
      {"sgp", F::kDecentralized, false, true, false},  // step t waits for its in-neighbours' messages of t - overlap
      // The low-communication family: local steps, then an exact average every H steps.
      {"localsgd", F::kSynchronous, false, true, false, true, true},
      {"slowmo", F::kSynchronous, false, true, false, true, true},
      {"diloco", F::kSynchronous, false, true, false, true, true},
  };
  return all;
}

}  // namespace

const std::deque<AlgorithmEntry>& algorithms() { return entries(); }

void register_algorithm(AlgorithmEntry entry) {
  require(!entry.name.empty(), "an algorithm needs a name");
  require(find(entry.name) == nullptr, "the catalogue already holds an algorithm named '" + entry.name + "'");
  entries().push_back(std::move(entry));
}

std::vector<std::string> simulated_algorithms() {
  std::vector<std::string> names;
  for (const auto& a : algorithms()) {
    if (a.simulated) names.push_back(a.name);
  }
  return names;
}

const AlgorithmEntry* find(const std::string& name) {
  const auto& all = algorithms();
  const auto it = std::find_if(all.begin(), all.end(), [&](const AlgorithmEntry& e) { return e.name == name; });
  return it == all.end() ? nullptr : &*it;
}

std::string family_name(Family family) {
  switch (family) {
    case Family::kSingleProcess:
      return "single-process";
    case Family::kSynchronous:
      return "synchronous";
    case Family::kAsynchronous:
      return "asynchronous";
    case Family::kDecentralized:
      return "decentralized";
  }
  return "";
}

bool needs_servers(const std::string& name) {
  const auto* entry = find(name);
  return entry && entry->needs_servers;
}

bool peers_only(const std::string& name) {
  const auto* entry = find(name);
  return entry && entry->family == Family::kDecentralized;
}

}  // namespace distsgd::catalog
