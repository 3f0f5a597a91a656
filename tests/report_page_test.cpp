// `distsgd report` without a browser: which plots a study's tables give (and why the others are left out), the
// figures in them, the self-contained page, and one clear line for a directory without results. The page in a real
// browser: tests/report_browser_test.sh (CTest Report.PageRendersInHeadlessChromium).
#include "distsgd/core/error.hpp"
#include "distsgd/report/report_assets.hpp"
#include "distsgd/report/report_charts.hpp"
#include "distsgd/report/report_data.hpp"
#include "distsgd/report/report_html.hpp"
#include "distsgd/report/report_tables.hpp"
#include "test_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

namespace distsgd::report {
namespace {

using testing::run_distsgd;
using testing::TempDir;

// A study's tables as distsgd study writes them: AR-SGD at 1 and 2 workers, with worker 1 three times slower at 2,
// gossip at 2, a failed SGP cell and a worker count predicted only.
StudyData fixture() {
  StudyData d;
  d.dir = "fixture";
  d.name = "fixture";
  d.axes = {"algo", "workers", "slowdown"};
  d.flag_axes = {"algo", "workers", "slowdown"};
  d.results.columns = {"cell",
                       "grid",
                       "label",
                       "status",
                       "reason",
                       "axis.algo",
                       "axis.workers",
                       "axis.slowdown",
                       "arguments",
                       "algorithm",
                       "workers",
                       "net",
                       "predicted.samples_per_second",
                       "samples_per_second",
                       "test_accuracy",
                       "wall_seconds",
                       "bytes_sent_per_worker",
                       "seconds_per_iteration.forward",
                       "seconds_per_iteration.backward",
                       "seconds_per_iteration.communication_wait"};
  const auto row = [&](std::vector<std::string> fields) { d.results.rows.push_back(std::move(fields)); };
  row({"a1",    "",     "algo=arsgd, workers=1, slowdown=none",
       "done",  "",     "arsgd",
       "1",     "none", "--algo arsgd --workers 1",
       "arsgd", "1",    "",
       "1100",  "1000", "0.8",
       "10",    "0",    "0.002",
       "0.004", "0"});
  row({"a2",    "",     "algo=arsgd, workers=2, slowdown=none",
       "done",  "",     "arsgd",
       "2",     "none", "--algo arsgd --workers 2",
       "arsgd", "2",    "",
       "2000",  "1600", "0.8",
       "10",    "4e6",  "0.002",
       "0.004", "0.001"});
  row({"a2s",   "",    "algo=arsgd, workers=2, slowdown=1:3",
       "done",  "",    "arsgd",
       "2",     "1:3", "--algo arsgd --workers 2 --slowdown 1:3",
       "arsgd", "2",   "",
       "",      "800", "0.8",
       "20",    "4e6", "0.002",
       "0.004", "0.01"});
  row({"g2",     "",     "algo=gossip, workers=2, slowdown=none",
       "done",   "",     "gossip",
       "2",      "none", "--algo gossip --workers 2",
       "gossip", "2",    "",
       "",       "1500", "0.7",
       "10",     "8e6",  "0.002",
       "0.004",  "0.002"});
  row({"s2",
       "",
       "algo=sgp, workers=2, slowdown=none",
       "failed",
       "worker 1 (rank 1) exited with status 1: boom",
       "sgp",
       "2",
       "none",
       "--algo sgp --workers 2",
       "sgp",
       "2",
       "",
       "",
       "",
       "",
       "",
       "",
       "",
       "",
       ""});
  row({"a4",        "",     "algo=arsgd, workers=4, slowdown=none",
       "simulated", "",     "arsgd",
       "4",         "none", "--algo arsgd --workers 4",
       "arsgd",     "4",    "",
       "3000",      "",     "",
       "",          "",     "",
       "",          ""});
  d.curves.columns = {"cell", "grid", "label", "epoch", "wall_seconds", "test_accuracy", "parameter_variance"};
  d.curves.rows = {{"a1", "", "algo=arsgd, workers=1, slowdown=none", "1", "5", "0.7", "0"},
                   {"a1", "", "algo=arsgd, workers=1, slowdown=none", "2", "10", "0.8", "0"},
                   {"g2", "", "algo=gossip, workers=2, slowdown=none", "1", "6", "0.6", "0.25"},
                   {"s2", "", "algo=sgp, workers=2, slowdown=none", "1", "6", "0.5", "0.5"}};
  return d;
}

const ReportChart* find_chart(const ReportCharts& charts, const std::string& name) {
  const auto it =
      std::find_if(charts.charts.begin(), charts.charts.end(), [&](const auto& c) { return c.name == name; });
  return it == charts.charts.end() ? nullptr : &*it;
}

// The values of a chart's data with `key` equal to `value`.
std::vector<nlohmann::ordered_json> values_where(const ReportChart& chart, const std::string& key,
                                                 const nlohmann::ordered_json& value) {
  std::vector<nlohmann::ordered_json> found;
  for (const auto& v : chart.spec["data"]["values"]) {
    if (v.contains(key) && v[key] == value) found.push_back(v);
  }
  return found;
}

// A prediction on a calibrated cluster carries its range (results.csv's predicted.samples_per_second_low and _high):
// the throughput chart draws it as a band under the lines.
TEST(ReportCharts, APredictionsRangeIsABandUnderTheThroughputLines) {
  auto d = fixture();
  d.results.columns.push_back("predicted.samples_per_second_low");
  d.results.columns.push_back("predicted.samples_per_second_high");
  for (auto& row : d.results.rows) {
    const bool predicted_only = row[0] == "a4";
    row.push_back(predicted_only ? "2500" : "");
    row.push_back(predicted_only ? "3600" : "");
  }
  const auto charts = build_report_charts(d);
  const auto* throughput = find_chart(charts, "throughput");
  ASSERT_NE(throughput, nullptr);
  const auto predicted = values_where(*throughput, "source", "predicted");
  ASSERT_EQ(predicted.size(), 3u);
  EXPECT_FALSE(predicted[0].contains("low"));
  EXPECT_EQ(predicted[2]["low"], 2500.0);
  EXPECT_EQ(predicted[2]["high"], 3600.0);
  const auto& layers = throughput->spec["spec"]["layer"];
  ASSERT_EQ(layers.size(), 3u);
  EXPECT_EQ(layers[0]["mark"]["type"], "area");
  EXPECT_EQ(layers[0]["encoding"]["y"]["field"], "low");
  EXPECT_EQ(layers[0]["encoding"]["y2"]["field"], "high");
  EXPECT_NE(throughput->caption.find("The band: the range of the clusters"), std::string::npos);
}

TEST(ReportCharts, EveryPlotWithDataIsDrawnWithTheStudysFigures) {
  const auto charts = build_report_charts(fixture());
  for (const char* name : {"accuracy-time", "accuracy-epochs", "throughput", "speedup", "accuracy-workers", "breakdown",
                           "straggler", "bytes", "variance"}) {
    EXPECT_NE(find_chart(charts, name), nullptr) << name;
  }
  EXPECT_TRUE(charts.omitted.empty()) << charts.omitted.front();

  // Throughput: the measurement and the prediction of each worker count, the slowed run on a line of its own,
  // one panel per network.
  const auto* throughput = find_chart(charts, "throughput");
  ASSERT_NE(throughput, nullptr);
  EXPECT_EQ(throughput->spec["facet"]["column"]["field"], "network");
  const auto predicted = values_where(*throughput, "source", "predicted");
  ASSERT_EQ(predicted.size(), 3u);  // 1, 2 and 4 workers (4: predicted only)
  EXPECT_EQ(predicted[2]["workers"], 4.0);
  EXPECT_EQ(predicted[2]["samples_per_second"], 3000.0);
  EXPECT_EQ(predicted[2]["network"], "loopback");
  const auto measured = values_where(*throughput, "source", "measured");
  ASSERT_EQ(measured.size(), 4u);
  EXPECT_EQ(measured[2]["series"], "algo=arsgd, slowdown=1:3");
  // Speed-up over the fewest workers of the same line.
  const auto* speedup = find_chart(charts, "speedup");
  ASSERT_NE(speedup, nullptr);
  const auto arsgd = values_where(*speedup, "series", "algo=arsgd, slowdown=none");
  ASSERT_EQ(arsgd.size(), 5u);
  EXPECT_DOUBLE_EQ(arsgd[2]["speedup"].get<double>(), 1600.0 / 1000.0);  // measured
  EXPECT_DOUBLE_EQ(arsgd[4]["speedup"].get<double>(), 3000.0 / 1100.0);  // predicted

  // Without a calibrated cluster's range, no band.
  EXPECT_EQ(throughput->spec["spec"]["layer"].size(), 2u);

  // Final accuracy against workers: one point per configuration and worker count (the straggler is its own line).
  const auto* accuracy = find_chart(charts, "accuracy-workers");
  ASSERT_NE(accuracy, nullptr);
  const auto arsgd_accuracy = values_where(*accuracy, "series", "algo=arsgd, slowdown=none");
  ASSERT_FALSE(arsgd_accuracy.empty());
  EXPECT_EQ(arsgd_accuracy[0]["workers"], 1.0);
  EXPECT_DOUBLE_EQ(arsgd_accuracy[0]["test_accuracy"].get<double>(), 0.8);

  // The straggler: the slowed run beside the same configuration at full speed.
  const auto* straggler = find_chart(charts, "straggler");
  ASSERT_NE(straggler, nullptr);
  const auto slow = values_where(*straggler, "slowdown", "1:3");
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_DOUBLE_EQ(slow[0]["of_full_speed"].get<double>(), 800.0 / 1600.0);
  EXPECT_EQ(slow[0]["configuration"], "algo=arsgd, workers=2");

  // The breakdown in milliseconds, phases in the order an iteration runs them; failed cells are not plotted.
  const auto* breakdown = find_chart(charts, "breakdown");
  ASSERT_NE(breakdown, nullptr);
  const auto wait = values_where(*breakdown, "phase", "exposed communication");
  ASSERT_EQ(wait.size(), 4u);
  EXPECT_DOUBLE_EQ(wait[2]["milliseconds"].get<double>(), 10.0);
  EXPECT_TRUE(values_where(*breakdown, "run", "algo=sgp, workers=2, slowdown=none").empty());
  // Variance: only the runs whose workers' models differ, and finished.
  const auto variance = find_chart(charts, "variance")->spec["data"]["values"];
  ASSERT_EQ(variance.size(), 1u);
  EXPECT_EQ(variance[0]["parameter_variance"], 0.25);
}

TEST(ReportCharts, PlotsWithoutDataAreLeftOutSayingWhy) {
  StudyData d = fixture();
  d.curves = {};
  d.results.rows.resize(2);  // AR-SGD at 1 and 2 workers, no straggler
  d.results.rows[1][6] = "1";
  d.results.rows[1][10] = "1";
  const auto charts = build_report_charts(d);
  const auto said = [&](const std::string& text) {
    return std::any_of(charts.omitted.begin(), charts.omitted.end(),
                       [&](const std::string& why) { return why.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(said("test accuracy: no run has evaluated yet")) << charts.omitted.size();
  EXPECT_TRUE(said("throughput against workers: one worker count only"));
  EXPECT_TRUE(said("straggler robustness: no finished runs that differ only in --slowdown"));
  EXPECT_TRUE(said("parameter variance"));
  EXPECT_EQ(find_chart(charts, "throughput"), nullptr);
  EXPECT_NE(find_chart(charts, "breakdown"), nullptr);
}

TEST(ReportCharts, WithoutSlowdownSplitsTheArguments) {
  EXPECT_EQ(without_slowdown("--algo asp --slowdown 3:10 --workers 4"),
            std::make_pair(std::string("--algo asp --workers 4"), std::string("3:10")));
  EXPECT_EQ(without_slowdown("--slowdown 1:2 3:5"), std::make_pair(std::string(""), std::string("1:2 3:5")));
  EXPECT_EQ(without_slowdown("--algo asp").second, "none");
}

TEST(ReportTables, FailedCellsSayWhyAndPredictionsSitBesideMeasurements) {
  const auto table = runs_table(fixture(), /*with_simulated=*/false);
  ASSERT_EQ(table.rows.size(), 5u);
  EXPECT_EQ(table.rows[1][4], "2000");   // predicted samples/s
  EXPECT_EQ(table.rows[1][5], "1.25x");  // predicted / measured
  const std::string text = table_text(table);
  EXPECT_NE(text.find("\n    worker 1 (rank 1) exited with status 1: boom\n"), std::string::npos) << text;
  const std::string html = table_html(table);
  EXPECT_NE(html.find("<tr class=\"failed\">"), std::string::npos);
  EXPECT_EQ(html_escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
}

TEST(ReportPage, IsOneSelfContainedFile) {
  EXPECT_EQ(script_safe("x = '</script>'; y = '</SCRIPT'"), "x = '<\\/script>'; y = '<\\/SCRIPT'");
  ReportAssets assets;
  try {
    assets = load_report_assets("");
  } catch (const Error& e) {
    GTEST_SKIP() << e.what();
  }
  StudyData d = fixture();
  d.results.rows[0][2] = "</script><b>";  // a label that would end a script element early
  const auto charts = build_report_charts(d);
  const auto table = runs_table(d, true);
  const std::string html = report_html({d, charts, table, assets, {}, ""});
  // The libraries are inlined, nothing is loaded from elsewhere.
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  for (const auto& library : assets.libraries) {
    EXPECT_NE(html.find("/* " + library.name + " " + library.version + " */"), std::string::npos) << library.name;
  }
  // One </script> per script element: the three libraries, the data, the embedding code.
  size_t ends = 0;
  for (size_t at = html.find("</script"); at != std::string::npos; at = html.find("</script", at + 1)) ++ends;
  EXPECT_EQ(ends, 5u);
  EXPECT_NE(html.find("&lt;/script&gt;&lt;b&gt;"), std::string::npos);  // in the table, escaped
  EXPECT_NE(html.find("<div class=\"chart\" id=\"chart-throughput\">"), std::string::npos);
}

TEST(ReportCommand, ADirectoryWithoutResultsIsOneClearLine) {
  TempDir dir;
  const auto check = [](const std::string& args, const std::string& expected) {
    const auto run = run_distsgd(args);
    EXPECT_EQ(run.exit_code, 1) << args;
    EXPECT_NE(run.output.find("distsgd: error: " + expected), std::string::npos) << run.output;
    EXPECT_EQ(std::count(run.output.begin(), run.output.end(), '\n'), 1) << run.output;
  };
  check("report " + dir / "none", "distsgd report: " + dir / "none" + " is not a directory");
  check("report " + dir.str(), "distsgd report: " + dir.str() + " has no results.csv (run `distsgd study");
  std::ofstream(dir / "results.csv") << "cell,grid,label,status\nrun,,run,pending\n";
  check("report " + dir.str(),
        "distsgd report: " + dir / "results.csv" + " has no finished cell yet (1 pending; run the study first)");
}

}  // namespace
}  // namespace distsgd::report
