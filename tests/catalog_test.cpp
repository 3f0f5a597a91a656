// The catalogue (catalog/algorithm_catalog) and the registry (algo/) describe the same algorithms: the simulator and
// the harness, which cannot see algo/ (torch), read the catalogue, so a difference would make them treat an
// algorithm as something it is not (servers it does not have, a peer it does not need).
#include <gtest/gtest.h>

#include <algorithm>

#include "distsgd/algo/algorithm.hpp"
#include "distsgd/catalog/algorithm_catalog.hpp"
#include "distsgd/experiment/algorithm_recipes.hpp"
#include "distsgd/sim/algorithm_predictions.hpp"
#include "test_util.hpp"

namespace distsgd::testing {
namespace {

TEST(Catalog, SaysWhatTheRegistrySays) {
  ASSERT_EQ(catalog::algorithms().size(), algo::builtin_algorithms().size());
  for (const auto& info : algo::builtin_algorithms()) {
    const auto* entry = catalog::find(info.name);
    ASSERT_NE(entry, nullptr) << info.name << " is not in the catalogue";
    EXPECT_EQ(entry->needs_servers, info.needs_servers) << info.name;
    EXPECT_EQ(entry->models_differ, info.decentralized) << info.name;
    EXPECT_EQ(entry->independent_workers, info.independent_workers) << info.name;
    EXPECT_EQ(entry->family == catalog::Family::kSingleProcess, info.single_process) << info.name;
  }
  EXPECT_EQ(catalog::find("no-such-algorithm"), nullptr);
  EXPECT_FALSE(catalog::needs_servers("no-such-algorithm"));
}

TEST(Catalog, EveryPredictedAlgorithmAndEveryRecipeIsCatalogued) {
  // The analytical models cover exactly what the catalogue calls simulated (the DES reads the catalogue itself).
  auto predicted = sim::predicted_algorithms(), simulated = catalog::simulated_algorithms();
  std::sort(predicted.begin(), predicted.end());
  std::sort(simulated.begin(), simulated.end());
  EXPECT_EQ(predicted, simulated);
  for (const auto& recipe : experiment::algorithm_recipes()) {
    EXPECT_NE(catalog::find(recipe.algorithm), nullptr) << recipe.name();
  }
  EXPECT_TRUE(catalog::peers_only("sgp"));
  EXPECT_FALSE(catalog::peers_only("slowmo"));  // its models differ, but it averages them all, no peer needed
  EXPECT_EQ(catalog::family_name(catalog::find("aladdin")->family), "asynchronous");
}

// An extension registers its entry, models and recipe (examples/extension/, tests/extension_seam_test.cpp runs one);
// a name already taken, or a recipe or model of nothing, is one clear error and changes nothing.
TEST(Catalog, RegisteringATakenNameOrAnUnknownAlgorithmIsRefused) {
  const auto entries = catalog::algorithms().size();
  const auto models = sim::predicted_algorithms().size();
  const auto recipes = experiment::algorithm_recipes().size();
  catalog::AlgorithmEntry arsgd;
  arsgd.name = "arsgd";
  EXPECT_EQ(error_of_call([&] { catalog::register_algorithm(arsgd); }),
            "the catalogue already holds an algorithm named 'arsgd'");
  sim::AlgorithmModel model = sim::algorithm_model("arsgd");
  EXPECT_EQ(error_of_call([&] { sim::register_algorithm_model(model); }),
            "the simulator already has a model of 'arsgd'");
  model.workload = nullptr;
  model.name = "no-such-algorithm";
  EXPECT_NE(error_of_call([&] { sim::register_algorithm_model(model); }).find("needs a name"), std::string::npos);
  EXPECT_NE(error_of_call([] { sim::algorithm_model("no-such-algorithm"); }).find("--algo must be arsgd"),
            std::string::npos);
  EXPECT_NE(error_of_call([] {
              experiment::register_recipe({"no-such-algorithm", {}});
            }).find("the catalogue has no such algorithm"),
            std::string::npos);
  EXPECT_EQ(error_of_call([] {
              experiment::register_recipe({"bsp", {}});
            }),
            "a recipe named 'bsp' is already registered");
  EXPECT_EQ(catalog::algorithms().size(), entries);
  EXPECT_EQ(sim::predicted_algorithms().size(), models);
  EXPECT_EQ(experiment::algorithm_recipes().size(), recipes);
}

}  // namespace
}  // namespace distsgd::testing
