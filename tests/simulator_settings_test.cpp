// The simulator's settings are declared once (sim/simulator_settings.cpp): the harness's in-process parse of
// simulate's words and the command line read the same table, with the same rules.
#include <gtest/gtest.h>

#include <map>

#include "distsgd/algo/algorithm.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/sim/algorithm_predictions.hpp"
#include "distsgd/sim/des/settings.hpp"
#include "distsgd/sim/simulator_settings.hpp"
#include "test_util.hpp"

namespace distsgd::testing {
namespace {

std::string error_of(const std::vector<std::string>& words) {
  try {
    sim::simulator_settings_from(words);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(SimulatorSettings, WordsParseAsTheCommandLineDoes) {
  const auto s =
      sim::simulator_settings_from({"--algo", "ssp", "--staleness", "3", "--workers", "2,4", "8", "--fidelity", "des",
                                    "--slowdown", "1:2", "--slowdown", "0:3", "--servers", "2", "--sharding", "layer"});
  EXPECT_EQ(s.algorithm, "ssp");
  EXPECT_EQ(s.staleness, 3);
  EXPECT_EQ(s.workers, (std::vector<int64_t>{2, 4, 8}));
  EXPECT_EQ(s.fidelity, "des");
  EXPECT_EQ(s.slowdowns, (std::vector<std::string>{"1:2", "0:3"}));  // a repeated list flag gathers its values
  EXPECT_EQ(s.servers, 2);
  EXPECT_EQ(s.sharding, "layer");
  EXPECT_EQ(s.tau, sim::SimulatorSettings{}.tau);  // untouched settings keep their defaults
}

TEST(SimulatorSettings, BadWordsAreOneLineNamingTheFlag) {
  EXPECT_NE(error_of({"--bogus", "1"}).find("unknown option '--bogus'"), std::string::npos);
  EXPECT_NE(error_of({"--staleness"}).find("--staleness needs a value"), std::string::npos);
  EXPECT_NE(error_of({"--tau", "0"}).find("--tau must be at least 1 (got 0)"), std::string::npos);
  EXPECT_NE(error_of({"--gossip-prob", "1.5"}).find("--gossip-prob must be in [0.0, 1.0] (got 1.5)"),
            std::string::npos);
  EXPECT_NE(error_of({"--algo", "dgc"}).find("--algo must be arsgd, bsp,"), std::string::npos);
  EXPECT_NE(error_of({"--sharding", "rows"}).find("--sharding must be memory or layer (got 'rows')"),
            std::string::npos);
  // Rules across settings, as simulate says them.
  EXPECT_NE(error_of({"--algo", "asp", "--local-aggregation", "host"}).find("applies to bsp only"), std::string::npos);
  EXPECT_NE(error_of({"--slowdown", "1:2"}).find("need --fidelity des"), std::string::npos);
  // Every message names the words it came from.
  EXPECT_EQ(error_of({"--tau", "0"}).rfind("simulator settings '--tau 0': ", 0), 0u);
}

TEST(SimulatorSettings, TheCommandLineListsEveryDeclaredOption) {
  const auto help = run_distsgd("simulate --help").output;
  for (const auto& spec : sim::simulator_options()) {
    EXPECT_TRUE(sim::simulator_takes_flag(spec.flag)) << spec.flag;
    EXPECT_NE(help.find(spec.flag + " "), std::string::npos) << spec.flag;
  }
  EXPECT_FALSE(sim::simulator_takes_flag("--lr"));
}

// A flag that both train and simulate take means one thing: the same default, so that a prediction of a run made
// with train's defaults simulates that run. (The simulator cannot see algo/'s declarations, which need torch; this
// guards the copies until the catalogue holds one.)
TEST(SimulatorSettings, FlagsSharedWithTrainHaveTrainsDefaults) {
  std::map<std::string, std::string> train_defaults;
  for (const auto& spec : algo::algorithm_options()) train_defaults[spec.flag] = spec.default_text();
  int shared = 0;
  for (const auto& spec : sim::simulator_options()) {
    const auto train = train_defaults.find(spec.flag);
    if (train == train_defaults.end()) continue;
    ++shared;
    EXPECT_EQ(spec.default_text(), train->second) << spec.flag;
  }
  EXPECT_GE(shared, 15);  // the algorithms' settings: --staleness, --tau, --pi, --gossip-prob, --sync-every, ...
}

// The discrete-event simulator's own defaults (DesSettings, which its tests construct directly) are simulate's:
// a default `distsgd simulate --fidelity des` runs what a default DesSettings describes.
TEST(SimulatorSettings, TheDiscreteEventDefaultsAreSimulatesDefaults) {
  sim::SimulatorSettings given;
  given.fidelity = "des";
  const sim::DesSettings from_flags = sim::des_settings(given, 4);
  const sim::DesSettings d;
  EXPECT_EQ(from_flags.overlap, d.overlap);
  EXPECT_EQ(from_flags.bucket_bytes, d.bucket_bytes);
  EXPECT_EQ(from_flags.first_bucket_bytes, d.first_bucket_bytes);
  EXPECT_EQ(from_flags.density, d.density);
  EXPECT_EQ(from_flags.powersgd_rank, d.powersgd_rank);
  EXPECT_EQ(from_flags.powersgd_start, d.powersgd_start);
  EXPECT_EQ(from_flags.servers, d.servers);
  EXPECT_EQ(from_flags.sharding, d.sharding);
  EXPECT_EQ(from_flags.local_aggregation, d.local_aggregation);
  EXPECT_EQ(from_flags.staleness, d.staleness);
  EXPECT_EQ(from_flags.tau, d.tau);
  EXPECT_EQ(from_flags.pi, d.pi);
  EXPECT_EQ(from_flags.aladdin_variant, d.aladdin_variant);
  EXPECT_EQ(from_flags.gossip_probability, d.gossip_probability);
  EXPECT_EQ(from_flags.gossip_mode, d.gossip_mode);
  EXPECT_EQ(from_flags.sgp_overlap, d.sgp_overlap);
  EXPECT_EQ(from_flags.sync_every, d.sync_every);
  EXPECT_EQ(from_flags.fragments, d.fragments);
  EXPECT_EQ(from_flags.fragment_delay, d.fragment_delay);
  EXPECT_EQ(from_flags.outer_bits, d.outer_bits);
  EXPECT_EQ(from_flags.slowmo_base, d.slowmo_base);
  EXPECT_EQ(from_flags.iterations, d.iterations);
  EXPECT_EQ(from_flags.warmup, d.warmup);
  EXPECT_EQ(from_flags.seed, d.seed);
  EXPECT_EQ(from_flags.prefetch, d.prefetch);
  EXPECT_EQ(from_flags.collectives, d.collectives);
}

}  // namespace
}  // namespace distsgd::testing
