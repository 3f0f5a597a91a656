// The study specification and its grid: flags checked against distsgd train's, recipes under axes, exclusions,
// simulated worker counts, and one clear line for each kind of bad input.
#include "distsgd/experiment/study_spec.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/experiment/study_grid.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace distsgd::experiment {
namespace {

using Json = nlohmann::ordered_json;

std::vector<StudyCell> expand(const std::string& text) {
  return expand_study(parse_study_spec(Json::parse(text), "spec.json"), "spec.json");
}

// The error expanding `text` gives (empty when none).
std::string error_of_spec(const std::string& text) {
  return distsgd::testing::error_of_call([&] { expand(text); });
}

std::string value_of(const StudyCell& cell, const std::string& flag) {
  for (const auto& f : cell.flags) {
    if (f.flag == flag) return f.values.empty() ? "(switch)" : f.values.front();
  }
  return "(absent)";
}

TEST(StudySpec, ExpandsEveryCombinationWithRecipesUnderAxes) {
  const auto cells = expand(R"({
    "base": {"--dataset": "synthetic", "--batch-size": 32, "--no-checkpoint": true},
    "recipes": {"asp": {"--servers": 1, "--momentum": 0, "--batch-size": 16}},
    "axes": {"variant": [{"label": "arsgd", "--algo": "arsgd"},
                         {"label": "asp b64", "--algo": "asp", "--batch-size": 64},
                         {"label": "asp", "--algo": "asp"}],
             "--workers": [2, 4]}
  })");
  ASSERT_EQ(cells.size(), 6u);
  // The first axis varies slowest.
  EXPECT_EQ(cells[0].label, "arsgd, workers=2");
  EXPECT_EQ(cells[1].label, "arsgd, workers=4");
  EXPECT_EQ(cells[2].id, "variant=asp-b64_workers=2");
  // The recipe applies to its algorithm; an axis value wins over it.
  EXPECT_EQ(value_of(cells[0], "--servers"), "(absent)");
  EXPECT_EQ(value_of(cells[0], "--batch-size"), "32");
  EXPECT_EQ(value_of(cells[2], "--batch-size"), "64");
  EXPECT_EQ(value_of(cells[4], "--batch-size"), "16");
  EXPECT_EQ(cells[4].config.servers, 1);
  EXPECT_EQ(cells[4].config.momentum, 0);
  EXPECT_EQ(cells[5].config.workers, 4);
  EXPECT_FALSE(cells[5].config.checkpoint_each_epoch);
  EXPECT_EQ(value_of(cells[5], "--no-checkpoint"), "(switch)");
  EXPECT_EQ(cells[5].axis_label("variant"), "asp");
  EXPECT_EQ(cells[5].axis_label("--workers"), "4");
  // Command-line words in the order the flags were first set.
  const auto words = cells[0].arguments();
  ASSERT_GE(words.size(), 2u);
  EXPECT_EQ(words[0], "--dataset");
  EXPECT_EQ(words[1], "synthetic");
}

TEST(StudySpec, NullLeavesTheDefaultAndExcludeDropsCells) {
  const auto cells = expand(R"({
    "base": {"--workers": 4, "--dataset": "synthetic"},
    "axes": {"--algo": ["arsgd", "gosgd"], "--slowdown": [null, "3:5"]},
    "exclude": [{"--algo": "gosgd", "--slowdown": ["3:5"]}]
  })");
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[0].label, "algo=arsgd, slowdown=none");
  EXPECT_TRUE(cells[0].config.slowdowns.empty());
  EXPECT_EQ(cells[1].config.slowdowns.size(), 1u);
  EXPECT_EQ(cells[1].config.slowdowns[0].second, 5.0);
  EXPECT_EQ(cells[2].label, "algo=gosgd, slowdown=none");
}

TEST(StudySpec, SimulatedWorkerCountsJoinTheWorkersAxisOncePerSeed) {
  const auto cells = expand(R"({
    "base": {"--dataset": "synthetic"},
    "axes": {"--workers": [1, 2], "--seed": [1, 2]},
    "simulate_workers": [2, 16, 24]
  })");
  // 2 x 2 measured; 16 and 24 predicted once (the seed does not change a prediction); 2 is measured already.
  ASSERT_EQ(cells.size(), 6u);
  const auto simulated = std::count_if(cells.begin(), cells.end(), [](const StudyCell& c) { return c.simulated_only; });
  EXPECT_EQ(simulated, 2);
  EXPECT_EQ(cells[4].label, "workers=16, seed=1");
  EXPECT_TRUE(cells[4].simulated_only);
  EXPECT_EQ(cells[5].config.workers, 24);
}

TEST(StudySpec, GridsAddToTheTopLevel) {
  const auto cells = expand(R"({
    "base": {"--dataset": "synthetic", "--epochs": 2},
    "recipes": {"bsp": {"--servers": 1}},
    "grids": [{"name": "a", "axes": {"--algo": ["bsp"]}},
              {"name": "b", "base": {"--epochs": 3, "--workers": 2}, "axes": {"--algo": ["bsp", "arsgd"]}}]
  })");
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[0].grid, "a");
  EXPECT_EQ(cells[0].id, "a/algo=bsp");
  EXPECT_EQ(cells[0].config.epochs, 2);
  EXPECT_EQ(cells[0].config.servers, 1);
  EXPECT_EQ(cells[1].config.epochs, 3);
  EXPECT_EQ(cells[2].config.workers, 2);
}

TEST(StudySpec, BadInputIsOneClearLine) {
  struct Case {
    const char* spec;
    const char* expected;
  };
  const Case cases[] = {
      {R"({"base": {"--wrokers": 4}})", "spec.json: base: unknown flag --wrokers"},
      {R"({"axes": {"--wrokers": [1, 2]}})", "spec.json: axes.--wrokers: unknown flag --wrokers"},
      {R"({"axes": {"workers": [1, 2]}})", "spec.json: axes.workers[0]: unknown axis 'workers'"},
      {R"({"axes": {"--workers": []}})", "spec.json: axes.--workers: an axis needs at least one value"},
      {R"({"axis": {"--workers": [1]}})", "spec.json: unknown field 'axis'"},
      {R"({"base": {"--out": "x"}})", "spec.json: base: --out is the study's"},
      {R"({"recipes": {"aps": {"--servers": 1}}})", "spec.json: recipes: unknown algorithm 'aps'"},
      {R"({"base": {"--workers": [2, 4]}})", "spec.json: base: --workers takes one value"},
      {R"({"axes": {"--algo": ["bsp"]}, "base": {"--staleness": 3, "--servers": 1}})",
       "spec.json: cell 'algo=bsp': --staleness applies to ssp only (not bsp)"},
      {R"({"axes": {"--workers": [0]}})", "spec.json: cell 'workers=0': --workers must be at least 1"},
      {R"({"axes": {"--algo": ["arsgd"]}, "exclude": [{"--algo": "arsgd"}]})", "spec.json: the grid has no cells"},
      {R"({"axes": {"--algo": ["arsgd"]}, "exclude": [{"--seed": 1}]})", "'--seed' is not an axis of this grid"},
      {R"({"axes": {"v": [{"label": "a"}, {"label": "a"}]}})", "the label 'a' appears twice"},
  };
  for (const auto& c : cases) {
    const std::string error = error_of_spec(c.spec);
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.spec << "\n  gave: " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace distsgd::experiment
