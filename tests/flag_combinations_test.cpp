// Flag combinations that would be silently ignored are refused with one line: --compress dgc with arsgd exchanges
// the sparse gradient in one allgather after backward, so an --overlap other than none does not apply.
#include "distsgd/core/config.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/train/options.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace {

// The error validation gives arsgd with these flags, or "" when it accepts them.
std::string error_of_flags(const std::vector<std::pair<std::string, std::string>>& flags) {
  distsgd::TrainConfig c;
  c.algorithm = "arsgd";
  c.workers = 2;
  for (const auto& [flag, value] : flags) distsgd::train::set_option(c, flag, {value});
  try {
    distsgd::train::validate(c);
    return "";
  } catch (const distsgd::Error& e) {
    return e.what();
  }
}

}  // namespace

TEST(FlagCombinations, DgcWithAllreduceRefusesAnOverlapItWouldIgnore) {
  for (const std::string overlap : {"wfbp", "multistep"}) {
    EXPECT_EQ(error_of_flags({{"--compress", "dgc"}, {"--overlap", overlap}}),
              "--compress dgc with arsgd exchanges the sparse gradient in one allgather after backward: --overlap " +
                  overlap + " does not apply (leave --overlap out, or give none)");
  }
  EXPECT_EQ(error_of_flags({{"--compress", "dgc"}}), "") << "the default overlap is not the user's";
  EXPECT_EQ(error_of_flags({{"--compress", "dgc"}, {"--overlap", "none"}}), "") << "what the sparse exchange does";
  EXPECT_EQ(error_of_flags({{"--overlap", "wfbp"}}), "");
}

// Values no flag means (issue 26): --lr inf was accepted (and trained on NaN); nan passed no rule, inf every "not
// negative" one. --threads 100000 started threads until the host stalled.
TEST(FlagCombinations, NonFiniteNumbersAndThreadCountsBeyondReasonAreRefused) {
  const auto error_of = [](const std::string& flag, const std::string& value) {
    return distsgd::testing::error_of_call([&] {
      distsgd::TrainConfig c;
      distsgd::train::set_option(c, flag, {value});
      distsgd::train::validate(c);
    });
  };
  for (const std::string value : {"inf", "-inf", "nan", "Infinity"}) {
    EXPECT_EQ(error_of("--lr", value), "--lr: '" + value + "' is not a finite number");
  }
  EXPECT_EQ(error_of("--weight-decay", "inf"), "--weight-decay: 'inf' is not a finite number");
  EXPECT_EQ(error_of("--time-budget", "inf"), "--time-budget: 'inf' is not a finite number");
  EXPECT_EQ(error_of("--lr", "-0.1"), "--lr must not be negative (got -0.1)");
  EXPECT_EQ(error_of("--lr", "0"), "") << "no step from the gradients: the decentralized tests' pure mixing";
  EXPECT_EQ(error_of("--lr", "0.05"), "");

  const std::string threads = error_of("--threads", "100000");
  EXPECT_EQ(threads.rfind("--threads must be in [0, ", 0), 0u) << threads;
  EXPECT_NE(threads.find("(got 100000)"), std::string::npos) << threads;
  EXPECT_NE(error_of("--threads", "-1"), "");
  EXPECT_EQ(error_of("--threads", "256"), "") << "256 threads are allowed on any host";
  EXPECT_EQ(error_of("--threads", "0"), "");
}
