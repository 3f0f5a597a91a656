// Every preset parses and expands to the grid its README paragraph ("Studies and reports") promises.
#include "distsgd/experiment/study_presets.hpp"
#include "distsgd/cluster/link_spec.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/experiment/study_grid.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

namespace distsgd::experiment {
namespace {

struct Grid {
  std::vector<StudyCell> measured, simulated;
  std::set<std::string> algorithms, nets;
  std::set<int64_t> measured_workers, simulated_workers;
};

Grid expand_preset(const std::string& name, const std::string& grid = "") {
  Grid g;
  for (auto& cell : expand_study(preset_study_spec(name), "preset " + name)) {
    if (!grid.empty() && cell.grid != grid) continue;
    g.algorithms.insert(cell.config.algorithm);
    g.nets.insert(cell.config.net);
    (cell.simulated_only ? g.simulated_workers : g.measured_workers).insert(cell.config.workers);
    (cell.simulated_only ? g.simulated : g.measured).push_back(cell);
  }
  return g;
}

const StudyCell& find_cell(const std::vector<StudyCell>& cells, const std::string& algorithm) {
  const auto it =
      std::find_if(cells.begin(), cells.end(), [&](const auto& c) { return c.config.algorithm == algorithm; });
  if (it == cells.end()) throw Error("no cell of " + algorithm);
  return *it;
}

double setting(const StudyCell& cell, const std::string& key) {
  return std::any_cast<double>(cell.config.algorithm_settings.at(key));
}
int64_t int_setting(const StudyCell& cell, const std::string& key) {
  return std::any_cast<int64_t>(cell.config.algorithm_settings.at(key));
}

TEST(StudyPresets, EveryPresetParsesAndExpands) {
  for (const auto& name : study_preset_names()) {
    EXPECT_NO_THROW(expand_preset(name)) << name;
    EXPECT_FALSE(preset_study_spec(name).description.empty()) << name;
  }
}

TEST(StudyPresets, UnknownPresetListsThePresets) {
  try {
    preset_study_spec("ipdps");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("there is no preset 'ipdps' (presets: demo, ipdps-accuracy"),
              std::string::npos)
        << e.what();
  }
}

TEST(StudyPresets, DemoHasAccuracyScalingAndStraggler) {
  const auto accuracy = expand_preset("demo", "accuracy");
  EXPECT_EQ(accuracy.measured.size(), 11u);
  EXPECT_EQ(accuracy.algorithms.size(), 10u);  // every algorithm but the single-process sgd
  EXPECT_EQ(accuracy.measured_workers, (std::set<int64_t>{4}));
  const auto scaling = expand_preset("demo", "scaling");
  EXPECT_EQ(scaling.measured.size(), 11u);  // AR-SGD from 2 workers: one process has no network to emulate
  EXPECT_EQ(scaling.measured_workers, (std::set<int64_t>{1, 2, 4}));
  EXPECT_EQ(scaling.simulated_workers, (std::set<int64_t>{8, 16}));
  EXPECT_EQ(scaling.nets, (std::set<std::string>{"100mbit"}));
  const auto straggler = expand_preset("demo", "straggler");
  EXPECT_EQ(straggler.measured.size(), 8u);
  const auto slow = std::count_if(straggler.measured.begin(), straggler.measured.end(),
                                  [](const auto& c) { return c.config.slowdown_of(3) == 5.0; });
  EXPECT_EQ(slow, 4);
}

TEST(StudyPresets, IpdpsAccuracyHasTenAlgorithmsAtFourAndEightWithThePapersValues) {
  const auto g = expand_preset("ipdps-accuracy");
  EXPECT_EQ(g.measured.size(), 20u);
  EXPECT_TRUE(g.simulated.empty());
  EXPECT_EQ(g.algorithms, (std::set<std::string>{"bsp", "asp", "ssp", "easgd", "arsgd", "gosgd", "adpsgd", "aladdin",
                                                 "sgp", "gossip"}));
  EXPECT_EQ(g.measured_workers, (std::set<int64_t>{4, 8}));
  EXPECT_EQ(int_setting(find_cell(g.measured, "ssp"), "staleness"), 10);
  EXPECT_EQ(int_setting(find_cell(g.measured, "easgd"), "tau"), 8);
  EXPECT_DOUBLE_EQ(setting(find_cell(g.measured, "gosgd"), "gossip_prob"), 0.01);
}

TEST(StudyPresets, IpdpsScalingUsesTwoNetworksInTheRatioTenToFiftySixAndSimulatesToTwentyFour) {
  const auto g = expand_preset("ipdps-scaling");
  EXPECT_EQ(g.algorithms, (std::set<std::string>{"bsp", "asp", "ssp", "arsgd", "adpsgd"}));
  EXPECT_EQ(g.measured_workers, (std::set<int64_t>{1, 2, 4}));
  EXPECT_EQ(g.simulated_workers, (std::set<int64_t>{8, 12, 16, 24}));
  EXPECT_EQ(g.measured.size(), 2u * (5 * 3 - 2));  // AR-SGD and AD-PSGD from 2 workers
  EXPECT_EQ(g.simulated.size(), 2u * 5 * 4);
  ASSERT_EQ(g.nets.size(), 2u);
  const double slow = cluster::parse_link("--net", *g.nets.begin()).rate_bits_per_second;
  const double fast = cluster::parse_link("--net", *g.nets.rbegin()).rate_bits_per_second;
  EXPECT_DOUBLE_EQ(std::max(slow, fast) / std::min(slow, fast), 56.0 / 10.0);
}

TEST(StudyPresets, IpdpsOptimizationsCoverShardingWfbpAndDgc) {
  const auto g = expand_preset("ipdps-optimizations");
  EXPECT_EQ(g.algorithms, (std::set<std::string>{"bsp", "asp", "ssp"}));
  EXPECT_EQ(g.measured.size(), 12u);
  int sharded = 0, compressed = 0, wfbp = 0;
  for (const auto& cell : g.measured) {
    const std::string optimization = cell.axis_label("optimization");
    sharded += cell.config.servers == 4;
    compressed += optimization == "+dgc";
    for (const auto& flag : cell.flags) {
      if (flag.flag == "--overlap") wfbp += flag.values.at(0) == "wfbp";
    }
    if (optimization != "+sharding") {
      EXPECT_EQ(cell.config.servers, 1) << cell.label;
    }
  }
  EXPECT_EQ(sharded, 3);  // each optimization on its own, for each of the three algorithms
  EXPECT_EQ(compressed, 3);
  EXPECT_EQ(wfbp, 3);
}

TEST(StudyPresets, AladdinHeterogeneitySlowsOneWorkerTwoFiveAndTenTimes) {
  const auto g = expand_preset("aladdin-heterogeneity");
  EXPECT_EQ(g.algorithms, (std::set<std::string>{"aladdin", "arsgd", "sgp", "asp"}));
  EXPECT_EQ(g.measured.size(), 16u);
  std::set<double> factors;
  for (const auto& cell : g.measured) factors.insert(cell.config.slowdown_of(3));
  EXPECT_EQ(factors, (std::set<double>{1, 2, 5, 10}));
}

TEST(StudyPresets, JinScalingComparesSynchronousElasticAndGossipPastThisHost) {
  const auto g = expand_preset("jin-scaling");
  EXPECT_EQ(g.algorithms, (std::set<std::string>{"arsgd", "easgd", "gossip"}));
  EXPECT_EQ(g.measured.size(), 8u);
  EXPECT_EQ(g.measured_workers, (std::set<int64_t>{2, 4}));
  EXPECT_EQ(g.simulated_workers, (std::set<int64_t>{8, 16, 32}));
}

TEST(StudyPresets, ScalingAccuracyRunsEveryAlgorithmVirtuallyFromFourToSixtyFourWorkersOnTwoClusters) {
  const auto g = expand_preset("scaling-accuracy");
  EXPECT_EQ(g.algorithms.size(), 10u);
  EXPECT_EQ(g.measured_workers, (std::set<int64_t>{4, 8, 16, 32, 64}));
  EXPECT_EQ(g.measured.size(), 10u * 5 * 2);
  std::set<std::string> clusters;
  for (const auto& cell : g.measured) {
    EXPECT_TRUE(cell.config.virtual_cluster);
    EXPECT_EQ(cell.config.profile, "titan-v");
    EXPECT_EQ(cell.config.evals_per_epoch, 4);
    clusters.insert(cell.config.cluster);
  }
  EXPECT_EQ(clusters, (std::set<std::string>{"ipdps2021-10gbe", "ipdps2021-56gb-ib"}));
}

TEST(StudyPresets, ScalingAccuracyDeepAsksTheSameOfResnet20) {
  const auto g = expand_preset("scaling-accuracy-deep");
  EXPECT_EQ(g.algorithms.size(), 10u);
  EXPECT_EQ(g.measured_workers, (std::set<int64_t>{4, 16, 64}));
  EXPECT_EQ(g.measured.size(), 10u * 3);
  for (const auto& cell : g.measured) {
    EXPECT_TRUE(cell.config.virtual_cluster);
    EXPECT_EQ(cell.config.model, "resnet20");
    EXPECT_EQ(cell.config.dataset, "fashion-mnist");
    EXPECT_EQ(cell.config.cluster, "ipdps2021-10gbe");
  }
}

TEST(StudyPresets, LowBandwidthSetsTheNewMethodsAgainstTheOldOnTwoSlowNetworks) {
  const auto g = expand_preset("low-bandwidth");
  EXPECT_EQ(g.algorithms, (std::set<std::string>{"arsgd", "asp", "aladdin", "localsgd", "slowmo", "diloco"}));
  EXPECT_EQ(g.nets, (std::set<std::string>{"100mbit", "10mbit,delay=50ms"}));
  EXPECT_EQ(g.measured.size(), 9u * 2);
  for (const auto& cell : g.measured) {
    EXPECT_EQ(cell.config.workers, 4);
    EXPECT_EQ(cell.config.target_accuracy, 0.8);
    // Independent workers evaluate only at the end under a time budget; the others four times an epoch.
    const bool independent = cell.config.algorithm == "asp" || cell.config.algorithm == "aladdin";
    EXPECT_EQ(cell.config.evals_per_epoch, independent ? 1 : 4) << cell.config.algorithm;
  }
  const auto& streaming = *std::find_if(g.measured.begin(), g.measured.end(), [](const StudyCell& c) {
    return c.config.algorithm_settings.count("fragments") > 0;
  });
  EXPECT_EQ(int_setting(streaming, "fragments"), 2);
  EXPECT_EQ(int_setting(streaming, "outer_bits"), 4);
  const auto powersgd = std::count_if(g.measured.begin(), g.measured.end(), [](const StudyCell& c) {
    return c.config.algorithm_settings.count("rank") > 0 && int_setting(c, "rank") == 2;
  });
  EXPECT_EQ(powersgd, 2) << "PowerSGD at rank 2 on both networks";
}

}  // namespace
}  // namespace distsgd::experiment
