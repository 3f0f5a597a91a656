#include "distsgd/cli/algorithm_recipes.hpp"

#include <algorithm>

#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"

namespace distsgd::cli {

// bench/emulated_network.sh's list (bench/README.md, "The algorithms on an emulated cluster"), and for GoSGD and
// gossip scripts/compare.sh's (p = 0.1: at the IPDPS default of 0.01 a worker barely communicates). The simulator is
// given every setting explicitly, as its defaults differ from train's in places (--tau 1, --sgp-overlap 1).
const std::vector<AlgorithmRecipe>& algorithm_recipes() {
  static const std::vector<AlgorithmRecipe> all = {
      {"arsgd",
       {"--overlap", "wfbp", "--bucket-mb", "25", "--first-bucket-mb", "1"},
       {"--overlap", "wfbp", "--bucket-mb", "25", "--first-bucket-mb", "1"},
       false,
       "synchronous"},
      {"bsp", {}, {}, true, "synchronous"},
      {"asp", {"--momentum", "0"}, {}, true, "asynchronous"},
      {"ssp", {"--staleness", "3", "--momentum", "0"}, {"--staleness", "3"}, true, "asynchronous"},
      {"easgd", {"--tau", "2"}, {"--tau", "2"}, true, "asynchronous"},
      {"aladdin", {"--pi", "4"}, {"--pi", "4"}, true, "asynchronous"},
      {"gosgd", {"--gossip-prob", "0.1"}, {"--gossip-prob", "0.1"}, false, "decentralized"},
      {"gossip", {"--gossip-mode", "pull"}, {}, false, "decentralized"},
      {"sgp", {"--sgp-overlap", "1"}, {"--sgp-overlap", "1"}, false, "decentralized"},
      {"adpsgd", {}, {}, false, "decentralized"},
  };
  return all;
}

double mape_target(const AlgorithmRecipe& recipe) { return recipe.family == "synchronous" ? 0.10 : 0.15; }

std::vector<std::string> recipe_names() {
  std::vector<std::string> names;
  for (const auto& r : algorithm_recipes()) names.push_back(r.algorithm);
  return names;
}

std::vector<AlgorithmRecipe> recipes_for(const std::vector<std::string>& names, const std::string& flag) {
  std::vector<AlgorithmRecipe> chosen;
  for (const auto& name : names) {
    const auto& all = algorithm_recipes();
    const auto it = std::find_if(all.begin(), all.end(), [&](const auto& r) { return r.algorithm == name; });
    require(it != all.end(), flag + ": unknown algorithm '" + name + "' (expected " + join_or(recipe_names()) + ")");
    const bool repeated = std::any_of(chosen.begin(), chosen.end(), [&](const auto& r) { return r.algorithm == name; });
    require(!repeated, flag + ": '" + name + "' is listed twice");
    chosen.push_back(*it);
  }
  return chosen;
}

namespace {

std::vector<std::string> with_servers(const std::vector<std::string>& flags, bool uses_servers, int64_t servers) {
  std::vector<std::string> all = flags;
  if (uses_servers) all.insert(all.end(), {"--servers", std::to_string(servers)});
  return all;
}

}  // namespace

std::vector<std::string> train_flags_of(const AlgorithmRecipe& recipe, int64_t servers) {
  auto flags = with_servers(recipe.train_flags, recipe.uses_servers, servers);
  flags.insert(flags.begin(), {"--algo", recipe.algorithm});
  return flags;
}

std::vector<std::string> simulate_flags_of(const AlgorithmRecipe& recipe, int64_t servers) {
  auto flags = with_servers(recipe.simulate_flags, recipe.uses_servers, servers);
  flags.insert(flags.begin(), {"--algo", recipe.algorithm});
  return flags;
}

}  // namespace distsgd::cli
