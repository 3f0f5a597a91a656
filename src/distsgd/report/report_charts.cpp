#include "distsgd/report/report_charts.hpp"

#include "distsgd/core/text.hpp"
#include "distsgd/experiment/study_grid.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

namespace distsgd::report {

using experiment::CsvTable;
using experiment::path_safe;
namespace {

using Json = nlohmann::ordered_json;

constexpr int kWidth = 440;
constexpr int kHeight = 260;
constexpr const char* kSchema = "https://vega.github.io/schema/vega-lite/v5.json";  // an identifier: never fetched

// Axes that are x, panels or repeats of one line rather than lines of their own.
const std::vector<std::string> kNotSeries{"workers", "net", "seed", "slowdown"};

// The phases of summary.json's seconds_per_iteration, in the order an iteration runs them.
const std::vector<std::pair<std::string, std::string>> kPhases{
    {"data_wait", "data"},    {"forward", "forward"},
    {"backward", "backward"}, {"communication_wait", "exposed communication"},
    {"update", "update"},     {"slowdown", "slowdown (straggler sleep)"}};

// Long run names stay whole in legends and on axes.
Json label_config() { return Json{{"legend", {{"labelLimit", 600}}}, {"axis", {{"labelLimit", 400}}}}; }

// A legend of line styles (measured / predicted, a run's setting): grey strokes, as the colour is another channel's.
Json dash_legend() {
  return Json{{"symbolType", "stroke"}, {"symbolStrokeColor", "#444"}, {"symbolStrokeWidth", 2}, {"symbolSize", 400}};
}

// Lines through points: a line layer (colour and dash) under a point layer (colour, tooltip). Two layers rather than
// a line mark with points, whose dash legend Vega-Lite draws with an invisible stroke.
void draw_lines(Json& spec, const Json& encoding) {
  Json line = encoding, points = encoding;
  line.erase("tooltip");
  points.erase("strokeDash");
  spec["layer"] = Json::array({Json{{"mark", "line"}, {"encoding", line}},
                               Json{{"mark", {{"type", "point"}, {"filled", true}}}, {"encoding", points}}});
}

Json base_spec(const std::string& description, Json values) {
  return Json{{"$schema", kSchema}, {"description", description}, {"data", {{"values", std::move(values)}}},
              {"width", kWidth},    {"height", kHeight},          {"config", label_config()}};
}

Json field(const std::string& name, const std::string& type, const std::string& title) {
  return Json{{"field", name}, {"type", type}, {"title", title}};
}

bool done(const StudyData& d, size_t row) { return d.results.at(row, "status") == "done"; }

std::vector<std::string> grids_of(const CsvTable& table) {
  std::vector<std::string> grids;
  for (size_t r = 0; r < table.rows.size(); ++r) {
    const std::string& grid = table.at(r, "grid");
    if (std::find(grids.begin(), grids.end(), grid) == grids.end()) grids.push_back(grid);
  }
  return grids;
}

std::string in_grid(const std::string& title, const std::string& grid) {
  return grid.empty() ? title : title + " (" + grid + ")";
}

std::string chart_name(const std::string& base, const std::string& grid) {
  return grid.empty() ? base : base + "-" + path_safe(grid);
}

// The left-out axes' labels of a row ("workers=4, net=100mbit"): what tells apart the runs of one series.
std::string setting(const StudyData& d, const CsvTable& table, size_t row) {
  std::vector<std::string> parts;
  for (const auto& axis : d.axes) {
    if (std::find(kNotSeries.begin(), kNotSeries.end(), axis) == kNotSeries.end()) continue;
    const std::string& label = table.at(row, "axis." + axis);
    if (!label.empty()) parts.push_back(axis + "=" + label);
  }
  return parts.empty() ? "-" : join(parts, ", ");
}

// Test accuracy against wall time and against epochs, one pair of plots per grid whose runs evaluated more than once.
void accuracy_charts(const StudyData& d, ReportCharts& out) {
  if (!d.curves.has_column("test_accuracy")) {
    out.omitted.push_back("test accuracy: no run has evaluated yet (curves.csv is empty)");
    return;
  }
  for (const auto& grid : grids_of(d.curves)) {
    Json values = Json::array();
    std::map<std::string, int> evaluations;
    std::set<std::string> settings;
    for (size_t r = 0; r < d.curves.rows.size(); ++r) {
      if (d.curves.at(r, "grid") != grid) continue;
      const auto accuracy = d.number(d.curves, r, "test_accuracy");
      const auto seconds = d.number(d.curves, r, "wall_seconds");
      const auto epoch = d.number(d.curves, r, "epoch");
      const auto run = d.result_row(d.curves.at(r, "cell"));
      if (!accuracy || !seconds || !epoch || !run || !done(d, *run)) continue;
      ++evaluations[d.curves.at(r, "cell")];
      settings.insert(setting(d, d.results, *run));
      values.push_back({{"run", d.curves.at(r, "label")},
                        {"series", d.series(d.results, *run, kNotSeries)},
                        {"setting", setting(d, d.results, *run)},
                        {"wall_seconds", *seconds},
                        {"epoch", *epoch},
                        {"test_accuracy", *accuracy}});
    }
    const bool curves = std::any_of(evaluations.begin(), evaluations.end(), [](const auto& e) { return e.second > 1; });
    if (!curves) {
      out.omitted.push_back(in_grid("test accuracy curves", grid) +
                            ": every run evaluated once (time-budget runs evaluate at the end)");
      continue;
    }
    for (const auto& [x, x_title, what] :
         {std::tuple{"wall_seconds", "wall time (s)", "wall time"}, std::tuple{"epoch", "epochs", "epochs"}}) {
      Json spec = base_spec("test accuracy against " + std::string(what), values);
      Json encoding = {{"x", field(x, "quantitative", x_title)},
                       {"y", field("test_accuracy", "quantitative", "test accuracy")},
                       {"color", field("series", "nominal", "configuration")},
                       {"detail", {{"field", "run"}, {"type", "nominal"}}},
                       {"tooltip", Json::array({field("run", "nominal", "run"), field(x, "quantitative", x_title),
                                                field("test_accuracy", "quantitative", "test accuracy")})}};
      encoding["y"]["scale"] = {{"zero", false}};
      if (settings.size() > 1) {
        encoding["strokeDash"] = field("setting", "nominal", "setting");
        encoding["strokeDash"]["legend"] = dash_legend();
      }
      draw_lines(spec, encoding);
      out.charts.push_back(
          {chart_name(std::string("accuracy-") + (x == std::string("epoch") ? "epochs" : "time"), grid),
           in_grid("Test accuracy against " + std::string(what), grid),
           "Every evaluation of every run (curves.csv): the test accuracy of the model the algorithm "
           "is evaluated on (the servers' model for the parameter-server algorithms, the workers' "
           "average for the decentralized ones).",
           spec});
    }
  }
}

struct Point {
  std::string series, network, source;
  double workers, samples_per_second;
  // A prediction on a calibrated cluster: the range of the clusters that fit its points (NaN: none).
  double low = std::nan(""), high = std::nan("");
};

// Mean over repeats (seeds) of each (series, network, source, workers).
std::vector<Point> mean_points(const std::vector<Point>& points) {
  struct Sum {
    double samples_per_second = 0, low = 0, high = 0;
    int count = 0, ranged = 0;
  };
  std::map<std::tuple<std::string, std::string, std::string, double>, Sum> sums;
  std::vector<std::tuple<std::string, std::string, std::string, double>> order;
  for (const auto& p : points) {
    const auto key = std::make_tuple(p.series, p.network, p.source, p.workers);
    if (!sums.count(key)) order.push_back(key);
    auto& sum = sums[key];
    sum.samples_per_second += p.samples_per_second;
    sum.count += 1;
    if (!std::isnan(p.low)) sum.low += p.low, sum.high += p.high, sum.ranged += 1;
  }
  std::vector<Point> means;
  for (const auto& key : order) {
    const auto& [series, network, source, workers] = key;
    const auto& sum = sums[key];
    Point mean{series, network, source, workers, sum.samples_per_second / sum.count};
    if (sum.ranged == sum.count) mean.low = sum.low / sum.count, mean.high = sum.high / sum.count;
    means.push_back(mean);
  }
  return means;
}

Json worker_axis(const std::set<double>& counts) {
  Json values = Json::array();
  for (const double w : counts) values.push_back(w);
  Json x = field("workers", "quantitative", "workers");
  x["scale"] = {{"type", "log"}, {"base", 2}};
  x["axis"] = {{"values", values}, {"format", "d"}};
  return x;
}

Json panels(Json spec, const std::string& description, Json values) {
  Json faceted{{"$schema", kSchema},
               {"description", description},
               {"data", {{"values", std::move(values)}}},
               {"facet", {{"column", field("network", "nominal", "network")}}},
               {"spec", std::move(spec)},
               {"config", label_config()}};
  return faceted;
}

// Throughput and speed-up against workers: measured (solid) and predicted (dashed), one panel per network.
void scaling_charts(const StudyData& d, ReportCharts& out) {
  for (const auto& grid : grids_of(d.results)) {
    std::vector<Point> points;
    std::set<double> counts;
    for (size_t r = 0; r < d.results.rows.size(); ++r) {
      if (d.results.at(r, "grid") != grid) continue;
      const auto workers = d.number(d.results, r, "workers");
      if (!workers) continue;
      const std::string series = d.series(d.results, r, {"workers", "net", "seed"});
      const std::string network = d.network(d.results, r);
      const auto measured = d.number(d.results, r, "samples_per_second");
      if (done(d, r) && measured) points.push_back({series, network, "measured", *workers, *measured});
      if (const auto predicted = d.number(d.results, r, "predicted.samples_per_second")) {
        points.push_back({series, network, "predicted", *workers, *predicted});
        const auto low = d.number(d.results, r, "predicted.samples_per_second_low");
        const auto high = d.number(d.results, r, "predicted.samples_per_second_high");
        if (low && high) points.back().low = *low, points.back().high = *high;
      }
    }
    for (const auto& p : points) counts.insert(p.workers);
    if (counts.size() < 2) {
      out.omitted.push_back(in_grid("throughput against workers", grid) + ": one worker count only");
      continue;
    }
    const auto means = mean_points(points);
    Json throughput = Json::array(), speedup = Json::array();
    bool ranged = false;
    for (const auto& p : means) {
      throughput.push_back({{"series", p.series},
                            {"network", p.network},
                            {"source", p.source},
                            {"workers", p.workers},
                            {"samples_per_second", p.samples_per_second}});
      if (!std::isnan(p.low)) {
        throughput.back()["low"] = p.low;
        throughput.back()["high"] = p.high;
        ranged = true;
      }
      // Speed-up over the fewest workers of the same line.
      const Point* base = nullptr;
      for (const auto& q : means) {
        if (q.series == p.series && q.network == p.network && q.source == p.source &&
            (!base || q.workers < base->workers)) {
          base = &q;
        }
      }
      if (base && base->samples_per_second > 0) {
        speedup.push_back({{"series", p.series},
                           {"network", p.network},
                           {"source", p.source},
                           {"workers", p.workers},
                           {"base_workers", base->workers},
                           {"speedup", p.samples_per_second / base->samples_per_second}});
      }
    }
    const auto line = [&](const std::string& y, const std::string& y_title) {
      Json spec{{"width", 300}, {"height", kHeight}};
      Json source = field("source", "nominal", "");
      source["scale"] = {{"domain", {"measured", "predicted"}}};
      source["legend"] = dash_legend();
      draw_lines(
          spec,
          {{"x", worker_axis(counts)},
           {"y", field(y, "quantitative", y_title)},
           {"color", field("series", "nominal", "configuration")},
           {"strokeDash", source},
           {"tooltip", Json::array({field("series", "nominal", "configuration"), field("source", "nominal", "source"),
                                    field("workers", "quantitative", "workers"), field(y, "quantitative", y_title)})}});
      return spec;
    };
    auto throughput_spec = line("samples_per_second", "samples/s");
    if (ranged) {
      // Under the lines: the range of the clusters that fit a calibration's points within their noise.
      throughput_spec["layer"].insert(throughput_spec["layer"].begin(),
                                      Json{{"mark", {{"type", "area"}, {"opacity", 0.15}}},
                                           {"transform", Json::array({Json{{"filter", "isValid(datum.low)"}}})},
                                           {"encoding",
                                            {{"x", worker_axis(counts)},
                                             {"y", field("low", "quantitative", "samples/s")},
                                             {"y2", {{"field", "high"}}},
                                             {"color", field("series", "nominal", "configuration")}}}});
    }
    out.charts.push_back(
        {chart_name("throughput", grid), in_grid("Throughput against workers", grid),
         std::string("samples/s of the whole cluster (summary.json's samples_per_second, the mean over "
                     "seeds), measured (solid) and as the simulator predicts the same configuration "
                     "(dashed; past this host's worker counts, predicted only).") +
             (ranged ? " The band: the range of the clusters that fit the calibration's points "
                       "within their noise (distsgd calibrate --noise)."
                     : ""),
         panels(throughput_spec, "throughput against workers", throughput)});
    out.charts.push_back(
        {chart_name("speedup", grid), in_grid("Speed-up against workers", grid),
         "Throughput over the throughput of the same line at its fewest workers (1 where measured), "
         "measured (solid) and predicted (dashed).",
         panels(line("speedup", "speed-up over the fewest workers"), "speed-up against workers", speedup)});
  }
}

// Final test accuracy against workers (virtual clusters span 4..256 workers): how much each algorithm loses as the
// cluster grows, one line per configuration, the mean over seeds.
void accuracy_against_workers_chart(const StudyData& d, ReportCharts& out) {
  for (const auto& grid : grids_of(d.results)) {
    std::map<std::pair<std::string, double>, std::pair<double, int>> sums;
    std::vector<std::pair<std::string, double>> order;
    std::set<double> counts;
    for (size_t r = 0; r < d.results.rows.size(); ++r) {
      if (d.results.at(r, "grid") != grid || !done(d, r)) continue;
      const auto workers = d.number(d.results, r, "workers");
      const auto accuracy = d.number(d.results, r, "test_accuracy");
      if (!workers || !accuracy) continue;
      const auto key = std::make_pair(d.series(d.results, r, {"workers", "seed"}), *workers);
      if (!sums.count(key)) order.push_back(key);
      sums[key].first += *accuracy;
      sums[key].second += 1;
      counts.insert(*workers);
    }
    if (counts.size() < 2) continue;  // the throughput chart already says why for grids of one worker count
    Json values = Json::array();
    for (const auto& key : order) {
      values.push_back(
          {{"series", key.first}, {"workers", key.second}, {"test_accuracy", sums[key].first / sums[key].second}});
    }
    Json spec = base_spec("final test accuracy against workers", values);
    Json y = field("test_accuracy", "quantitative", "final test accuracy");
    y["scale"] = {{"zero", false}};
    draw_lines(spec, {{"x", worker_axis(counts)},
                      {"y", y},
                      {"color", field("series", "nominal", "configuration")},
                      {"tooltip", Json::array({field("series", "nominal", "configuration"),
                                               field("workers", "quantitative", "workers"),
                                               field("test_accuracy", "quantitative", "test accuracy")})}});
    out.charts.push_back({chart_name("accuracy-workers", grid), in_grid("Final test accuracy against workers", grid),
                          "summary.json's test_accuracy at the end of each run (the mean over seeds), against the "
                          "number of workers: where an algorithm loses accuracy as the cluster grows (staleness of "
                          "the asynchronous ones, slower mixing of the decentralized ones, a larger global batch of "
                          "the synchronous ones). For virtual runs (train --virtual) their time axis elsewhere is "
                          "the virtual cluster's.",
                          spec});
  }
}

// Seconds per iteration of each run, split into its phases (the mean over workers), stacked.
void breakdown_chart(const StudyData& d, ReportCharts& out) {
  Json values = Json::array();
  std::set<std::string> runs;
  for (size_t r = 0; r < d.results.rows.size(); ++r) {
    if (!done(d, r)) continue;
    for (size_t k = 0; k < kPhases.size(); ++k) {
      const auto seconds = d.number(d.results, r, "seconds_per_iteration." + kPhases[k].first);
      if (!seconds || (kPhases[k].first == "slowdown" && *seconds == 0)) continue;
      runs.insert(d.run_name(d.results, r));
      values.push_back({{"run", d.run_name(d.results, r)},
                        {"phase", kPhases[k].second},
                        {"order", k},
                        {"milliseconds", *seconds * 1e3}});
    }
  }
  if (values.empty()) {
    out.omitted.push_back("time breakdown: no finished run");
    return;
  }
  Json domain = Json::array();
  for (const auto& phase : kPhases) domain.push_back(phase.second);
  Json spec = base_spec("time per iteration by phase", values);
  spec["height"] = std::max<size_t>(kHeight / 2, 18 * runs.size());
  spec["mark"] = "bar";
  Json color = field("phase", "nominal", "phase");
  color["scale"] = {{"domain", domain}};
  Json y = field("run", "nominal", "run");
  y["sort"] = nullptr;  // the study's order
  spec["encoding"] = {{"y", y},
                      {"x", field("milliseconds", "quantitative", "milliseconds per iteration (mean over workers)")},
                      {"color", color},
                      {"order", {{"field", "order"}, {"type", "quantitative"}}},
                      {"tooltip", Json::array({field("run", "nominal", "run"), field("phase", "nominal", "phase"),
                                               field("milliseconds", "quantitative", "ms")})}};
  out.charts.push_back({"breakdown", "Time per iteration by phase",
                        "summary.json's seconds_per_iteration, the mean over workers: data waited for, forward, "
                        "backward, communication not hidden behind computation, the update, and the sleep --slowdown "
                        "adds to a straggler.",
                        spec});
}

// Throughput of each configuration with and without a slow worker (runs that differ only in --slowdown).
void straggler_chart(const StudyData& d, ReportCharts& out) {
  std::map<std::string, std::vector<size_t>> groups;
  std::vector<std::string> order;
  for (size_t r = 0; r < d.results.rows.size(); ++r) {
    if (!done(d, r) || !d.number(d.results, r, "samples_per_second")) continue;
    const std::string key = d.results.at(r, "grid") + "|" + without_slowdown(d.results.at(r, "arguments")).first;
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(r);
  }
  Json values = Json::array();
  std::vector<std::string> slowdowns{"none"};
  for (const auto& key : order) {
    const auto& rows = groups[key];
    const auto full = std::find_if(rows.begin(), rows.end(), [&](size_t r) {
      return without_slowdown(d.results.at(r, "arguments")).second == "none";
    });
    if (full == rows.end() || rows.size() < 2) continue;
    const double full_speed = *d.number(d.results, *full, "samples_per_second");
    for (const size_t r : rows) {
      const std::string slowdown = without_slowdown(d.results.at(r, "arguments")).second;
      if (std::find(slowdowns.begin(), slowdowns.end(), slowdown) == slowdowns.end()) slowdowns.push_back(slowdown);
      std::string name = d.series(d.results, r, {"slowdown", "seed"});
      if (d.several_grids && !d.results.at(r, "grid").empty()) name = d.results.at(r, "grid") + ": " + name;
      const double rate = *d.number(d.results, r, "samples_per_second");
      values.push_back({{"configuration", name},
                        {"slowdown", slowdown},
                        {"samples_per_second", rate},
                        {"of_full_speed", full_speed > 0 ? rate / full_speed : 0.0}});
    }
  }
  if (values.empty()) {
    out.omitted.push_back("straggler robustness: no finished runs that differ only in --slowdown (one without)");
    return;
  }
  Json spec = base_spec("throughput with and without a straggler", values);
  spec["mark"] = "bar";
  Json x = field("configuration", "nominal", "");
  x["sort"] = nullptr;
  x["axis"] = {{"labelAngle", -30}};
  Json color = field("slowdown", "nominal", "--slowdown RANK:FACTOR");
  Json domain = Json::array();
  for (const auto& s : slowdowns) domain.push_back(s);
  color["scale"] = {{"domain", domain}};
  spec["encoding"] = {
      {"x", x},
      {"xOffset", {{"field", "slowdown"}, {"type", "nominal"}, {"sort", domain}}},
      {"y", field("samples_per_second", "quantitative", "samples/s")},
      {"color", color},
      {"tooltip",
       Json::array(
           {field("configuration", "nominal", "configuration"),
            field("slowdown", "nominal", "slowdown"),
            field("samples_per_second", "quantitative", "samples/s"),
            {{"field", "of_full_speed"}, {"type", "quantitative"}, {"title", "of full speed"}, {"format", ".2f"}}})}};
  out.charts.push_back({"straggler", "Robustness to a straggler",
                        "Throughput of each configuration with every worker at full speed (none) and with one worker "
                        "FACTOR times slower (--slowdown RANK:FACTOR); the tooltip gives the fraction of full speed "
                        "kept.",
                        spec});
}

void bytes_chart(const StudyData& d, ReportCharts& out) {
  Json values = Json::array();
  for (size_t r = 0; r < d.results.rows.size(); ++r) {
    const auto bytes = d.number(d.results, r, "bytes_sent_per_worker");
    if (!done(d, r) || !bytes) continue;
    values.push_back({{"run", d.run_name(d.results, r)}, {"megabytes", *bytes / 1e6}});
  }
  if (values.empty()) {
    out.omitted.push_back("bytes per worker: no finished run reports bytes_sent_per_worker");
    return;
  }
  Json spec = base_spec("bytes sent per worker", values);
  spec["height"] = std::max<size_t>(kHeight / 2, 18 * values.size());
  spec["mark"] = "bar";
  Json y = field("run", "nominal", "run");
  y["sort"] = nullptr;
  spec["encoding"] = {
      {"y", y},
      {"x", field("megabytes", "quantitative", "MB sent per worker (algorithmic bytes)")},
      {"tooltip", Json::array({field("run", "nominal", "run"), field("megabytes", "quantitative", "MB per worker")})}};
  out.charts.push_back({"bytes", "Bytes sent per worker",
                        "summary.json's bytes_sent_per_worker over the whole run: what the algorithm sends (a ring "
                        "allreduce 2(n-1)/n of the message, a push its slice, DGC 8 bytes per selected entry).",
                        spec});
}

// Per grid: the runs whose workers hold different models, at every evaluation.
void variance_charts(const StudyData& d, ReportCharts& out) {
  bool any = false;
  for (const auto& grid : grids_of(d.curves)) {
    Json values = Json::array();
    for (size_t r = 0; r < d.curves.rows.size(); ++r) {
      if (d.curves.at(r, "grid") != grid) continue;
      const auto variance = d.number(d.curves, r, "parameter_variance");
      const auto epoch = d.number(d.curves, r, "epoch");
      const auto run = d.result_row(d.curves.at(r, "cell"));
      if (!variance || !epoch || *variance <= 0 || !run || !done(d, *run)) continue;
      values.push_back({{"run", d.curves.at(r, "label")}, {"epoch", *epoch}, {"parameter_variance", *variance}});
    }
    if (values.empty()) continue;
    any = true;
    Json spec = base_spec("parameter variance across workers", values);
    Json y = field("parameter_variance", "quantitative", "mean ||x_i - mean(x)||^2");
    y["scale"] = {{"type", "log"}};
    draw_lines(spec, {{"x", field("epoch", "quantitative", "epochs")},
                      {"y", y},
                      {"color", field("run", "nominal", "run")},
                      {"tooltip", Json::array({field("run", "nominal", "run"), field("epoch", "quantitative", "epoch"),
                                               field("parameter_variance", "quantitative", "variance")})}});
    out.charts.push_back({chart_name("variance", grid), in_grid("Parameter variance across workers", grid),
                          "At every evaluation: the mean over workers of the squared distance of each worker's "
                          "parameters to their average (runs whose workers hold different models).",
                          spec});
  }
  if (!any) {
    out.omitted.push_back(
        "parameter variance: every run kept identical models on its workers (or reports no variance)");
  }
}

}  // namespace

std::pair<std::string, std::string> without_slowdown(const std::string& arguments) {
  std::istringstream words(arguments);
  std::vector<std::string> kept, slowdown;
  bool in_slowdown = false;
  for (std::string word; words >> word;) {
    if (word.rfind("--", 0) == 0) in_slowdown = word == "--slowdown";
    if (in_slowdown) {
      if (word != "--slowdown") slowdown.push_back(word);
    } else {
      kept.push_back(word);
    }
  }
  return {join(kept, " "), slowdown.empty() ? "none" : join(slowdown, " ")};
}

ReportCharts build_report_charts(const StudyData& data) {
  ReportCharts out;
  accuracy_charts(data, out);
  scaling_charts(data, out);
  accuracy_against_workers_chart(data, out);
  breakdown_chart(data, out);
  straggler_chart(data, out);
  bytes_chart(data, out);
  variance_charts(data, out);
  return out;
}

}  // namespace distsgd::report
