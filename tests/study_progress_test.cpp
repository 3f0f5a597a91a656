// The study's progress line: cells done and failed, the cell running, and the time left from the cells so far.
#include "distsgd/experiment/study_progress.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace distsgd::experiment {
namespace {

TEST(StudyProgress, CountsCellsAndEstimatesTheTimeLeftFromTheCellsSoFar) {
  std::ostringstream out;
  StudyProgress progress(4, 1, 0, {30.0}, out, /*terminal=*/false);
  EXPECT_EQ(progress.line(), "study: 1/4 cells done | ETA 1m30s");  // 3 cells left at 30 s each
  progress.start("algo=asp, workers=4");
  EXPECT_EQ(out.str(), "study: 1/4 cells done | running algo=asp, workers=4 (0s) | ETA 1m30s\n");
  progress.finish(/*failed=*/true, 90.0);
  progress.start("algo=bsp, workers=4");
  // Mean of 30 s and 90 s for the two cells left.
  EXPECT_NE(out.str().find("study: 2/4 cells done (1 failed) | running algo=bsp, workers=4 (0s) | ETA 2m00s\n"),
            std::string::npos)
      << out.str();
}

TEST(StudyProgress, WithoutAFinishedCellTheEstimateWaits) {
  std::ostringstream out;
  StudyProgress progress(2, 0, 0, {}, out, /*terminal=*/true);
  progress.start("run");
  EXPECT_EQ(out.str(), "\r\033[Kstudy: 0/2 cells done | running run (0s) | ETA after the first cell");
  progress.note("study: run failed: boom");
  EXPECT_NE(out.str().find("\r\033[Kstudy: run failed: boom\n"), std::string::npos);
  EXPECT_EQ(StudyProgress::duration(3725), "1h02m");
  EXPECT_EQ(StudyProgress::duration(65), "1m05s");
}

}  // namespace
}  // namespace distsgd::experiment
