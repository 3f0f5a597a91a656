// `distsgd commbench`: a small run end to end (launch, measure, fit, JSON), and one clear error for bad flags.
#include "distsgd/core/error.hpp"
#include "distsgd/core/linear_fit.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>

using distsgd::testing::read_file;
using distsgd::testing::run_distsgd;
using distsgd::testing::TempDir;

TEST(LinearFit, RecoversAnExactLine) {
  const std::vector<double> bytes{4096, 16384, 65536, 262144};
  std::vector<double> seconds;
  for (double m : bytes) seconds.push_back(50e-6 + m / 1e9);
  const auto fit = distsgd::fit_relative_least_squares(bytes, seconds);
  EXPECT_NEAR(fit.alpha, 50e-6, 1e-12);
  EXPECT_NEAR(fit.beta, 1e-9, 1e-18);
}

TEST(LinearFit, NeedsTwoDistinctSizes) {
  EXPECT_THROW(distsgd::fit_relative_least_squares({4096, 4096}, {1e-5, 2e-5}), distsgd::Error);
}

TEST(Commbench, TwoProcessesUpTo1MiBFitPositiveAlphaAndBeta) {
  TempDir dir;
  const std::string out = dir / "commbench.json";
  auto r = run_distsgd("commbench --processes 2 --max-mb 1 --repeats 3 --timeout 60 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("alpha = "), std::string::npos) << r.output;
  auto report = nlohmann::json::parse(read_file(out));
  EXPECT_EQ(report["processes"], 2);
  for (const char* primitive : {"allreduce", "send_recv"}) {
    SCOPED_TRACE(primitive);
    const auto& p = report[primitive];
    const auto sizes = p["sizes_bytes"].get<std::vector<int64_t>>();
    const auto seconds = p["median_seconds"].get<std::vector<double>>();
    ASSERT_EQ(sizes, (std::vector<int64_t>{4096, 16384, 65536, 262144, 1048576}));
    ASSERT_EQ(seconds.size(), sizes.size());
    for (double s : seconds) EXPECT_GT(s, 0);
    // Monotone-ish: the machine is shared and noisy, but 1 MiB never beats 4 KiB.
    EXPECT_GT(seconds.back(), seconds.front()) << p.dump();
    EXPECT_GT(p["alpha_seconds"].get<double>(), 0) << p.dump();
    EXPECT_GT(p["beta_seconds_per_byte"].get<double>(), 0) << p.dump();
  }
}

TEST(Commbench, BadFlagsEndWithOneClearError) {
  for (const char* flags : {"--processes 1", "--min-kb 0", "--min-kb 2048 --max-mb 1", "--repeats 0",
                            "--out /nonexistent/dir/x.json"}) {
    SCOPED_TRACE(flags);
    auto r = run_distsgd(std::string("commbench ") + flags);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_EQ(r.output.rfind("distsgd: error: ", 0), 0u) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
}

TEST(Commbench, HelpListsTheFlags) {
  auto r = run_distsgd("commbench --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* flag : {"--processes", "--min-kb", "--max-mb", "--repeats", "--timeout", "--out"}) {
    EXPECT_NE(r.output.find(flag), std::string::npos) << flag;
  }
}
