// The flags each algorithm runs with when distsgd compares the algorithms by itself (validate, advise): the recipes
// of bench/README.md's emulated-cluster table, which learn on lenet5 and mlp with Fashion-MNIST (ASP and SSP without
// momentum, which diverge with it). The simulator is given every one of them it takes, so that a prediction is of
// the very configuration that ran.
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <vector>
#include "distsgd/catalog/algorithm_catalog.hpp"

namespace distsgd::experiment {

struct AlgorithmRecipe {
  std::string algorithm;           // --algo of train and simulate
  std::vector<std::string> flags;  // after --algo: flag, value, flag, value ... (each given, defaults differ)
  // A variant of an algorithm (e.g. AR-SGD with PowerSGD) is a method of its own: its name in --algos, tables and
  // run directories. Empty: the algorithm's.
  std::string variant = {};

  const std::string& name() const { return variant.empty() ? algorithm : variant; }
  // From the catalogue: a parameter-server algorithm (also --servers S); synchronous, asynchronous or decentralized.
  bool uses_servers() const { return catalog::needs_servers(algorithm); }
  std::string family() const { return catalog::family_name(catalog::find(algorithm)->family); }
};

// The accuracy targets for the simulator (issue 11): MAPE <= 10% for the synchronous algorithms, <= 15% for
// the asynchronous and decentralized ones.
double mape_target(const AlgorithmRecipe& recipe);

// Every algorithm's, in the README's order, and the variants after their algorithm; then those registered.
const std::deque<AlgorithmRecipe>& algorithm_recipes();
// An extension's recipe (examples/extension/), registered before any command runs; its algorithm must be in the
// catalogue (catalog::register_algorithm first), and a name already taken is refused.
void register_recipe(AlgorithmRecipe recipe);
std::vector<std::string> recipe_names();

// The recipes of `names`, in that order; throws Error naming `flag` for an unknown or repeated name.
std::vector<AlgorithmRecipe> recipes_for(const std::vector<std::string>& names, const std::string& flag);

// `distsgd train` flags of a recipe (from --algo on), with `--servers servers` for the parameter-server ones.
std::vector<std::string> train_flags_of(const AlgorithmRecipe& recipe, int64_t servers);
// The same for `distsgd simulate`: those of the train flags that simulate takes (asked of its option table); the others
// (--momentum) do not change the time of an iteration.
std::vector<std::string> simulate_flags_of(const AlgorithmRecipe& recipe, int64_t servers);

}  // namespace distsgd::experiment
