// Flag combinations that would be silently ignored are refused with one line: --compress dgc with arsgd exchanges
// the sparse gradient in one allgather after backward, so an --overlap other than none does not apply.
#include "distsgd/core/config.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/train/options.hpp"

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
