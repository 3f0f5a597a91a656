#include "distsgd/experiment/algorithm_recipes.hpp"

#include <algorithm>
#include <utility>

#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/experiment/self_command.hpp"
#include "distsgd/sim/simulator_settings.hpp"

namespace distsgd::experiment {
namespace {

// bench/emulated_network.sh's list (bench/README.md, "The algorithms on an emulated cluster"), and for GoSGD and
// gossip scripts/compare.sh's (p = 0.1: at the IPDPS default of 0.01 a worker barely communicates). Every setting is
// given explicitly, as the simulator's defaults differ from train's in places (--tau 1, --sgp-overlap 1).
std::deque<AlgorithmRecipe>& recipes() {
  static std::deque<AlgorithmRecipe> all = {
      {"arsgd", {"--overlap", "wfbp", "--bucket-mb", "25", "--first-bucket-mb", "1"}},
      // PowerSGD at rank 2 after 10 plain steps, as powerSGD_hook's defaults (bench/README.md: PowerSGD vs DDP).
      {"arsgd",
       {"--overlap", "none", "--compress", "powersgd", "--rank", "2", "--powersgd-start", "10"},
       "arsgd-powersgd"},
      {"bsp", {}},
      {"asp", {"--momentum", "0"}},
      {"ssp", {"--staleness", "3", "--momentum", "0"}},
      {"easgd", {"--tau", "2"}},
      {"aladdin", {"--pi", "4"}},
      {"gosgd", {"--gossip-prob", "0.1"}},
      {"gossip", {"--gossip-mode", "pull"}},
      {"sgp", {"--sgp-overlap", "1"}},
      {"adpsgd", {}},
      // The low-communication family at H = 8 (bench/low_communication.sh): synchronous, every 8th step.
      {"localsgd", {"--sync-every", "8"}},
      {"slowmo", {"--sync-every", "8", "--slow-lr", "0.5", "--slow-momentum", "0.5"}},
      // SlowMo over SGP (fairscale's other base): an SGP push every step, the exact average every 8th.
      {"slowmo", {"--base", "sgp", "--sync-every", "8", "--slow-lr", "0.5", "--slow-momentum", "0.5"}, "slowmo-sgp"},
      {"diloco", {"--sync-every", "8", "--outer-lr", "0.5", "--outer-momentum", "0.7"}},
  };
  return all;
}

}  // namespace

const std::deque<AlgorithmRecipe>& algorithm_recipes() { return recipes(); }

void register_recipe(AlgorithmRecipe recipe) {
  require(catalog::find(recipe.algorithm) != nullptr,
          "a recipe of '" + recipe.algorithm + "': the catalogue has no such algorithm (register it first)");
  const bool taken =
      std::any_of(recipes().begin(), recipes().end(), [&](const auto& r) { return r.name() == recipe.name(); });
  require(!taken, "a recipe named '" + recipe.name() + "' is already registered");
  recipes().push_back(std::move(recipe));
}

double mape_target(const AlgorithmRecipe& recipe) { return recipe.family() == "synchronous" ? 0.10 : 0.15; }

std::vector<std::string> recipe_names() {
  std::vector<std::string> names;
  for (const auto& r : algorithm_recipes()) names.push_back(r.name());
  return names;
}

std::vector<AlgorithmRecipe> recipes_for(const std::vector<std::string>& names, const std::string& flag) {
  std::vector<AlgorithmRecipe> chosen;
  for (const auto& name : names) {
    const auto& all = algorithm_recipes();
    const auto it = std::find_if(all.begin(), all.end(), [&](const auto& r) { return r.name() == name; });
    require(it != all.end(), flag + ": unknown algorithm '" + name + "' (expected " + join_or(recipe_names()) + ")");
    const bool repeated = std::any_of(chosen.begin(), chosen.end(), [&](const auto& r) { return r.name() == name; });
    require(!repeated, flag + ": '" + name + "' is listed twice");
    chosen.push_back(*it);
  }
  return chosen;
}

std::vector<std::string> train_flags_of(const AlgorithmRecipe& recipe, int64_t servers) {
  std::vector<std::string> flags = {"--algo", recipe.algorithm};
  flags.insert(flags.end(), recipe.flags.begin(), recipe.flags.end());
  if (recipe.uses_servers()) flags.insert(flags.end(), {"--servers", std::to_string(servers)});
  return flags;
}

std::vector<std::string> simulate_flags_of(const AlgorithmRecipe& recipe, int64_t servers) {
  const auto all = train_flags_of(recipe, servers);
  std::vector<std::string> flags;
  for (std::size_t i = 0; i + 1 < all.size(); i += 2) {
    if (sim::simulator_takes_flag(all[i])) flags.insert(flags.end(), {all[i], all[i + 1]});
  }
  return flags;
}

}  // namespace distsgd::experiment
