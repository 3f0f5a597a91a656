// The catalogue (catalog/algorithm_catalog) and the registry (algo/) describe the same algorithms: the simulator and
// the harness, which cannot see algo/ (torch), read the catalogue, so a difference would make them treat an
// algorithm as something it is not (servers it does not have, a peer it does not need).
#include <gtest/gtest.h>

#include <algorithm>

#include "distsgd/algo/algorithm.hpp"
#include "distsgd/catalog/algorithm_catalog.hpp"
#include "distsgd/experiment/algorithm_recipes.hpp"
#include "distsgd/sim/algorithm_predictions.hpp"

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

}  // namespace
}  // namespace distsgd::testing
