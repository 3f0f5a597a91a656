// The catalogue (catalog/algorithm_catalog) and the registry (algo/) describe the same algorithms: the simulator and
// the harness, which cannot see algo/ (torch), read the catalogue, so a difference would make them treat an
// algorithm as something it is not (servers it does not have, a peer it does not need).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "distsgd/algo/algorithm.hpp"
#include "distsgd/catalog/algorithm_catalog.hpp"
#include "distsgd/catalog/algorithm_options.hpp"
#include "distsgd/experiment/algorithm_recipes.hpp"
#include "distsgd/sim/algorithm_predictions.hpp"
#include "distsgd/sim/simulator_settings.hpp"
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

// The option of `table` (train's or simulate's) that takes `flag`, or null.
template <class Table>
const typename Table::value_type* option_named(const Table& table, const std::string& flag) {
  const auto o = std::find_if(table.begin(), table.end(), [&](const auto& spec) { return spec.flag == flag; });
  return o == table.end() ? nullptr : &*o;
}

// The numeric settings train and simulate share are declared once (catalog/algorithm_options.hpp): both commands
// show the same help and default and keep the same rule.
template <class T>
void expect_declared_once(const catalog::options::Declared<T>& declared, const std::string& bad_value) {
  const auto* t = option_named(algo::algorithm_options(), declared.flag);
  ASSERT_NE(t, nullptr) << declared.flag;
  const auto* s = option_named(sim::simulator_options(), declared.flag);
  ASSERT_NE(s, nullptr) << declared.flag;
  EXPECT_EQ(t->help, declared.help);
  EXPECT_EQ(s->help, declared.help);
  EXPECT_EQ(t->value(TrainConfig{}), nlohmann::json(declared.default_value)) << declared.flag;
  const std::string train_error = error_of_call([&] {
    TrainConfig c;
    t->parse(c, {bad_value});
    t->check(c);
  });
  const std::string simulate_error = error_of_call([&] {
    sim::simulator_settings_from({"--profile", "p.json", declared.flag, bad_value});
  });
  EXPECT_NE(train_error.find(declared.rule.must), std::string::npos) << train_error;
  EXPECT_NE(simulate_error.find(declared.rule.must), std::string::npos) << simulate_error;
}

// A model's timing-neutral flags (a study predicts runs whatever their values) are flags its algorithm takes and the
// simulator does not: a misspelt or a timing flag there would let a prediction stand for a run it does not model.
TEST(Catalog, TimingNeutralFlagsAreTheAlgorithmsOwnAndNotTheSimulators) {
  int flags = 0;
  for (const auto& name : sim::predicted_algorithms()) {
    const auto& options = algo::find_algorithm(name).options;
    for (const auto& flag : sim::algorithm_model(name).timing_neutral_flags) {
      ++flags;
      EXPECT_TRUE(std::any_of(options.begin(), options.end(), [&](const OptionSpec* o) { return o->flag == flag; }))
          << name << " does not take " << flag;
      EXPECT_FALSE(sim::simulator_takes_flag(flag)) << flag;
    }
  }
  EXPECT_EQ(flags, 9);  // --dgc-clip-norm x4, --momentum-at x3, --moving-rate, --aladdin-alpha
}

TEST(Catalog, SharedSettingsAreDeclaredOnceForTrainAndSimulate) {
  expect_declared_once(catalog::options::kStaleness, "-1");
  expect_declared_once(catalog::options::kTau, "0");
  expect_declared_once(catalog::options::kPi, "0");
  expect_declared_once(catalog::options::kGossipProbability, "1.5");
  expect_declared_once(catalog::options::kSgpOverlap, "2");
  expect_declared_once(catalog::options::kSyncEvery, "0");
  expect_declared_once(catalog::options::kFragments, "0");
  expect_declared_once(catalog::options::kFragmentDelay, "-1");
  expect_declared_once(catalog::options::kOuterBits, "12");
  expect_declared_once(catalog::options::kPowerSgdRank, "0");
  expect_declared_once(catalog::options::kPowerSgdStart, "-1");
}

// So are the settings that are names: train and simulate take every word of the enumeration, start from the same
// one, refuse a word outside it naming the others, and simulate's help is train's (plus what it models beyond).
template <class E>
void expect_name_declared_once(const catalog::options::Declared<E>& declared,
                               const std::vector<std::string>& simulator_only = {}) {
  const auto* t = option_named(algo::algorithm_options(), declared.flag);
  ASSERT_NE(t, nullptr) << declared.flag;
  const auto* s = option_named(sim::simulator_options(), declared.flag);
  ASSERT_NE(s, nullptr) << declared.flag;
  EXPECT_EQ(t->help, declared.help);
  EXPECT_EQ(s->help.rfind(declared.help, 0), 0u) << s->help;
  const std::string default_word = name_of(declared.default_value);
  EXPECT_EQ(t->value(TrainConfig{}), default_word) << declared.flag;
  EXPECT_EQ(s->value(sim::SimulatorSettings{}), default_word) << declared.flag;
  for (const auto& word : enum_name_list<E>()) {
    TrainConfig c;
    t->parse(c, {word});
    EXPECT_EQ(t->value(c), word);
    sim::SimulatorSettings settings;  // the option alone: rules across settings (host: bsp only) are not its own
    s->parse(settings, {word});
    s->check(settings);
    EXPECT_EQ(s->value(settings), word);
  }
  for (const auto& word : simulator_only) {
    EXPECT_NE(error_of_call([&] {
                TrainConfig c;
                t->parse(c, {word});
              }),
              "")
        << word << " is simulate's own word for " << declared.flag;
  }
  const std::string every_word = join_or(enum_name_list<E>());
  const std::string train_error = error_of_call([&] {
    TrainConfig c;
    t->parse(c, {"no-such-word"});
  });
  const std::string simulate_error = error_of_call([&] {
    sim::simulator_settings_from({"--profile", "p.json", declared.flag, "no-such-word"});
  });
  EXPECT_NE(train_error.find(std::string(declared.flag) + " must be " + every_word), std::string::npos) << train_error;
  EXPECT_NE(simulate_error.find(std::string(declared.flag) + " must be "), std::string::npos) << simulate_error;
  for (const auto& word : enum_name_list<E>())
    EXPECT_NE(simulate_error.find(word), std::string::npos) << simulate_error;
}

TEST(Catalog, SettingsThatAreNamesAreDeclaredOnceForTrainAndSimulate) {
  expect_name_declared_once(catalog::options::kOverlap, {"mgwfbp", "merge-optimal"});
  expect_name_declared_once(catalog::options::kSharding);
  expect_name_declared_once(catalog::options::kLocalAggregation);
  expect_name_declared_once(catalog::options::kCompress);
  expect_name_declared_once(catalog::options::kGossipMode);
  expect_name_declared_once(catalog::options::kAladdinVariant);
  expect_name_declared_once(catalog::options::kSlowMoBase);
}

}  // namespace
}  // namespace distsgd::testing
