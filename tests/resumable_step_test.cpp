// ResumableStep (experiment/resumable_step.hpp): a step of validate's or advise's work is skipped when its output is
// complete and was made by the same command, also after the directory was moved or copied (the command then names the
// same outputs at their new place), and redone when the command changed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "distsgd/experiment/resumable_step.hpp"
#include "test_util.hpp"

namespace distsgd::testing {
namespace {

TEST(ResumableStep, AMovedDirectoryKeepsItsStepsAndAChangedCommandRedoesThem) {
  TempDir dir;
  const std::string here = dir / "first";
  std::filesystem::create_directories(here + "/clusters");
  const auto args_in = [](const std::string& study) {
    return std::vector<std::string>{"commbench", "--repeats", "10", "--cluster-out", study + "/clusters/c.json"};
  };
  int made = 0;
  const auto make = [&](const std::string& study) {
    return [&made, study] {
      ++made;
      std::ofstream(study + "/clusters/c.json") << "{}";
    };
  };
  const experiment::ResumableStep step(here + "/clusters/c.step.json", here + "/clusters/c.log");
  EXPECT_TRUE(step.run_in_process(args_in(here), false, "the fit", make(here)));
  EXPECT_FALSE(step.run_in_process(args_in(here), true, "the fit", make(here)));
  EXPECT_EQ(made, 1);

  // Copied elsewhere (as a resumed study directory may be): the same step, its output in the copy.
  const std::string there = dir / "second";
  std::filesystem::copy(here, there, std::filesystem::copy_options::recursive);
  const experiment::ResumableStep copied(there + "/clusters/c.step.json", there + "/clusters/c.log");
  EXPECT_TRUE(copied.same_command(args_in(there)));
  EXPECT_FALSE(copied.run_in_process(args_in(there), true, "the fit", make(there)));
  EXPECT_EQ(made, 1);
  // A changed setting, or an output outside the step's own directory, is another command.
  auto changed = args_in(there);
  changed[2] = "5";
  EXPECT_FALSE(copied.same_command(changed));
  auto elsewhere = args_in(there);
  elsewhere.back() = there + "/other/c.json";
  EXPECT_FALSE(copied.same_command(elsewhere));
  EXPECT_TRUE(copied.run_in_process(changed, true, "the fit", make(there)));
  EXPECT_EQ(made, 2);
}

}  // namespace
}  // namespace distsgd::testing
