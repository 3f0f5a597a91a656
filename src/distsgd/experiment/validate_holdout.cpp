#include "distsgd/experiment/validate_holdout.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/experiment/measured_cpu.hpp"
#include "distsgd/sim/analytical/prediction.hpp"
#include "distsgd/sim/calibration/calibration.hpp"
#include "distsgd/sim/calibration/holdout.hpp"
#include "distsgd/sim/calibration/measured_point_model.hpp"

namespace distsgd::experiment {
namespace {

// A row's point for the simulator: the algorithm its flags train (a recipe such as arsgd-powersgd is arsgd with
// compression flags), the rest of its flags as settings. The row's own name (the method) stays in the reports.
sim::MeasuredPoint point_of_row(const nlohmann::json& row) {
  sim::MeasuredPoint p;
  p.algorithm = row["algorithm"].get<std::string>();
  p.workers = row["workers"].get<int64_t>();
  p.samples_per_second = row["measured_samples_per_second"].get<double>();
  const auto flags = row["algorithm_flags"].get<std::vector<std::string>>();
  for (size_t i = 0; i < flags.size(); ++i) {
    if (flags[i] == "--algo" && i + 1 < flags.size()) {
      p.algorithm = flags[++i];
    } else {
      p.flags.push_back(flags[i]);
    }
  }
  p.origin = row["configuration"].get<std::string>();
  return p;
}

std::string method_of(const nlohmann::json& row) { return row["algorithm"].get<std::string>(); }

// The rows' run directories: every repeat's.
std::vector<std::string> run_dirs_of(const std::vector<const nlohmann::json*>& rows) {
  std::vector<std::string> dirs;
  for (const auto* row : rows) {
    std::vector<std::string> own;
    if (row->contains("run_dirs")) own = (*row)["run_dirs"].get<std::vector<std::string>>();
    if (own.empty() && row->contains("run_dir")) own.push_back((*row)["run_dir"].get<std::string>());
    dirs.insert(dirs.end(), own.begin(), own.end());
  }
  return dirs;
}

std::string signed_percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", 100 * fraction);
  return text;
}

// What a calibration is judged by (issue 25): held-out MAPE per algorithm, and the ranking per group.
constexpr double kErrorTarget = 0.15;
constexpr double kRankingTarget = 0.8;

// Mean absolute error per algorithm, as JSON ({"mape", "rows"} each) and as " NAME 12.3% (ROWS)" after `heading`.
nlohmann::json mean_error_by_algorithm(const std::map<std::string, std::vector<double>>& errors,
                                       const std::string& heading, std::ostream& out) {
  nlohmann::json mape = nlohmann::json::object();
  out << heading;
  for (const auto& [algorithm, e] : errors) {
    double sum = 0;
    for (const double x : e) sum += x;
    const double mean = sum / static_cast<double>(e.size());
    mape[algorithm] = {{"mape", mean}, {"rows", e.size()}};
    char figure[64];
    std::snprintf(figure, sizeof figure, " %s %.1f%% (%zu)", algorithm.c_str(), 100 * mean, e.size());
    out << figure;
  }
  out << "\n";
  return mape;
}

// The repeats of a group's rows as [repeat][row] (validate --repeats), when every row has the same number (two or
// more); none otherwise.
std::optional<std::vector<std::vector<double>>> repeats_of(const std::vector<const nlohmann::json*>& rows) {
  std::vector<std::vector<double>> repeats;  // [repeat][row]
  for (const auto* row : rows) {
    if (!row->contains("measured_repeats")) return std::nullopt;
    const auto values = (*row)["measured_repeats"].get<std::vector<double>>();
    if (values.size() < 2 || (!repeats.empty() && values.size() != repeats.size())) return std::nullopt;
    repeats.resize(values.size());
    for (size_t r = 0; r < values.size(); ++r) repeats[r].push_back(values[r]);
  }
  if (repeats.empty()) return std::nullopt;
  return repeats;
}

// The relative noise of the rows' measurements when they were repeated (validate --repeats): the rms deviation of a
// repeat from its row's median (N - 1 degrees of freedom a row), over sqrt(N), as a median of N runs is about that
// much nearer the truth than one run. `fallback` without repeats.
double measured_noise(const std::vector<const nlohmann::json*>& rows, double fallback) {
  double sum = 0;
  int64_t degrees = 0;
  size_t repeats = 0;
  for (const auto* row : rows) {
    if (!row->contains("measured_repeats")) continue;
    const auto values = (*row)["measured_repeats"].get<std::vector<double>>();
    if (values.size() < 2) continue;
    for (const double d : sim::deviations_from_median(values)) sum += d * d;
    degrees += static_cast<int64_t>(values.size()) - 1;
    repeats = values.size();
  }
  if (degrees == 0) return fallback;
  return std::sqrt(sum / static_cast<double>(degrees) / static_cast<double>(repeats));
}

constexpr double kDefaultNoise = 0.02;

// A held-out row's prediction and the range it is judged against.
struct PredictedRange {
  double predicted = 0, low = 0, high = 0;
  // A measurement adds its own noise to the model's range: two standard deviations either side.
  void widen(double noise) {
    low *= 1 - 2 * noise;
    high *= 1 + 2 * noise;
  }
};

// The discrete-event simulator's prediction of a row on the calibrated cluster file, with the range over the
// clusters the file keeps beside (simulate computes it), widened by the noise.
PredictedRange des_prediction(const RowPredictor& predict, const nlohmann::json& row, const std::string& cluster_path,
                              double noise) {
  const auto p = predict(row, cluster_path);
  PredictedRange range;
  range.predicted = range.low = range.high = p.at("samples_per_second").get<double>();
  if (p.contains("samples_per_second_range")) {
    range.low = std::min(range.low, p["samples_per_second_range"][0].get<double>());
    range.high = std::max(range.high, p["samples_per_second_range"][1].get<double>());
  }
  range.widen(noise);
  return range;
}

// One network's calibration on its calibration rows (`request`), by the discrete-event simulator or the analytical
// models, written to `cluster_path` with the clusters that fit as well.
sim::ClusterCalibration calibrate_network(sim::CalibrationRequest request,
                                          const std::vector<sim::ModelProfile>& profiles, bool with_des,
                                          const HoldoutOptions& options, const std::string& cluster_path) {
  std::set<std::string> ignored;
  if (with_des) sim::search_as_for_des(request);
  request.progress = options.progress;
  const auto calibration =
      sim::calibrate(request, with_des ? sim::des_model_of(request.points, profiles, ignored, options.des_points)
                                       : sim::analytical_model_of(request.points, profiles, ignored));
  auto calibrated = calibration.cluster;
  calibrated.name = request.base.name + "-calibrated";
  auto cluster_json = sim::to_json(calibrated);
  // The clusters that fit the calibration rows as well: simulate --cluster on this file predicts over them too.
  sim::add_consistent_clusters(cluster_json["calibration"], calibration, calibrated);
  write_json_atomically(cluster_path, cluster_json);
  return calibration;
}

// " unknown=value ..." of a calibration, and the same as JSON into `unknowns`.
std::string unknowns_text(const sim::ClusterCalibration& calibration, nlohmann::json& unknowns) {
  std::string text;
  for (const auto& u : calibration.unknowns) {
    unknowns[sim::name_of(u.unknown)] = {{"value", u.value}, {"fitted", u.fitted}, {"note", u.note}};
    char figure[64];
    std::snprintf(figure, sizeof figure, " %s=%.3g%s", sim::name_of(u.unknown).c_str(), u.value,
                  u.fitted ? "" : "(not fitted)");
    text += figure;
  }
  return text;
}

}  // namespace

nlohmann::json holdout_report(const nlohmann::json& rows, const std::string& dir, std::string& text,
                              const HoldoutOptions& options) {
  const auto shared_cores = options.shared_cores;
  const auto& predict_des = options.predict_des;
  const double noise = options.noise;
  // Rows measured without a straggler, by network; and those with one, scored apart.
  std::map<std::string, std::vector<const nlohmann::json*>> by_network, slowed_by_network;
  for (const auto& row : rows) {
    if (!row.contains("measured_samples_per_second")) continue;
    const bool slowed = row.value("straggler", "none") != "none";
    if (slowed && !predict_des) continue;
    (slowed ? slowed_by_network : by_network)[row["network"].get<std::string>()].push_back(&row);
  }
  std::map<std::string, std::vector<double>> slowed_errors;  // algorithm -> |error| of its rows with a straggler
  std::map<std::string, sim::ModelProfile> profiles;         // by path
  auto profile_of = [&](const nlohmann::json& row) {
    const auto path = row["profile"].get<std::string>();
    if (!profiles.count(path)) profiles.emplace(path, sim::load_model_profile(path));
    return profiles.at(path);
  };
  nlohmann::json report = {{"networks", nlohmann::json::object()}, {"rows", nlohmann::json::array()}};
  std::ostringstream out;
  const bool des_rows = options.des_for_every_row && predict_des;
  out << "held out: calibrated on each network's smallest worker count"
      << (options.calibrate_with_des ? " by the discrete-event simulator" : "") << ", scored on the others"
      << (des_rows ? " (predicted by the discrete-event simulator)" : "") << "\n";
  report["fidelity"] = des_rows ? "des" : "analytical";
  report["calibration_fidelity"] = options.calibrate_with_des ? "des" : "analytical";
  std::map<std::string, std::vector<double>> errors;                   // algorithm -> |error| of its held-out rows
  int64_t groups_scored = 0, groups_ranked = 0, groups_top_right = 0;  // for the summary line
  int64_t groups_repeated = 0, groups_repeats_ranked = 0, groups_repeats_same_top = 0;
  int64_t settled_total = 0, settled_alike = 0;  // pairs every repeat orders alike, and those predicted so
  // Summed over the groups with repeats: one run against another, and the prediction against one run.
  double repeats_tau_sum = 0, prediction_against_runs_tau_sum = 0;
  int64_t rows_ranged = 0, rows_inside = 0;      // held-out rows with a range, and those whose measurement lies in it
  double range_widths = 0;                       // the sum of their ranges' half-widths relative to the prediction
  int64_t slowed_ranged = 0, slowed_inside = 0;  // the same of the rows with a straggler
  for (const auto& [network, network_rows] : by_network) {
    std::vector<int64_t> workers;
    for (const auto* row : network_rows) workers.push_back((*row)["workers"].get<int64_t>());
    const auto split = sim::split_at_smallest_workers(workers);
    const auto& slowed_rows = slowed_by_network[network];
    if (split.held_out.empty() && slowed_rows.empty()) {
      out << "  " << network << ": one worker count only, nothing to hold out\n";
      continue;
    }
    sim::CalibrationRequest request;
    std::vector<sim::ModelProfile> calibration_profiles;
    for (const size_t i : split.calibration) {
      request.points.push_back(point_of_row(*network_rows[i]));
      calibration_profiles.push_back(profile_of(*network_rows[i]));
    }
    request.base = sim::load_cluster((*network_rows[split.calibration.front()])["cluster"].get<std::string>());
    // As validate's own predictions: the emulated networks' presets know nothing of this host's cores.
    if (shared_cores > 0) request.base.shared_cores = shared_cores;
    std::vector<const nlohmann::json*> calibration_rows;
    for (const size_t i : split.calibration) calibration_rows.push_back(network_rows[i]);
    const auto communication_cpu = hold_measured_communication_cpu(request, run_dirs_of(calibration_rows));
    const auto compute_cpu = hold_measured_compute_cpu(request, run_dirs_of(calibration_rows),
                                                       sim::compute_seconds(calibration_profiles.front()));
    const bool noise_from_repeats = noise <= 0 && measured_noise(calibration_rows, 0) > 0;
    request.noise = noise > 0 ? noise : measured_noise(calibration_rows, kDefaultNoise);
    std::set<std::string> ignored;
    const std::string cluster_path = dir + "/holdout-" + network + ".json";
    const auto calibration =
        calibrate_network(request, calibration_profiles, options.calibrate_with_des, options, cluster_path);
    nlohmann::json unknowns = nlohmann::json::object();
    out << "  " << network << ": calibrated on " << request.points.size() << " rows at "
        << workers[split.calibration.front()] << " workers (fit "
        << signed_percent(calibration.rms_relative_error).substr(1) << " rms; noise "
        << signed_percent(request.noise).substr(1) << (noise_from_repeats ? " from the repeats" : "")
        << (calibration.noise > request.noise ? ", ranges with the fit's " + signed_percent(calibration.noise).substr(1)
                                              : std::string())
        << "):" << unknowns_text(calibration, unknowns) << "\n";
    if (communication_cpu) {
      char line[200];
      std::snprintf(line, sizeof line,
                    "    communication_cpu measured, not fitted: %.3g ns per byte moved, from the CPU outside the "
                    "training threads of %lld workers' runs (cpu_after_warmup)\n",
                    communication_cpu->seconds_per_byte * 1e9, static_cast<long long>(communication_cpu->workers));
      out << line;
    }
    if (compute_cpu) {
      char line[200];
      std::snprintf(line, sizeof line,
                    "    compute's CPU measured: %.3g ms an iteration on the training threads of %lld workers' runs, "
                    "x%.3g the profile's compute (what a worker takes of the %.3g shared cores)\n",
                    compute_cpu->seconds * 1e3, static_cast<long long>(compute_cpu->workers), compute_cpu->scale,
                    request.base.shared_cores);
      out << line;
    }
    auto& network_json = report["networks"][network];
    network_json = {{"calibration_rows", split.calibration.size()},
                    {"calibration_workers", workers[split.calibration.front()]},
                    {"cluster", cluster_path},
                    {"rms_relative_error", calibration.rms_relative_error},
                    {"noise", request.noise},
                    {"range_noise", calibration.noise},
                    {"unknowns", unknowns}};
    if (communication_cpu) {
      network_json["measured_communication_cpu"] = to_json(*communication_cpu);
    }
    if (compute_cpu) network_json["measured_compute_cpu"] = to_json(*compute_cpu);

    // The rows with a straggler are predicted by the discrete-event simulator (the analytical models have no slowed
    // worker), so on a cluster it calibrated: what a figure means to one model is not what it means to the other
    // (compute_scale, with every worker's compute stretched by the cores' share in the analytical models and the
    // cores shared as the workers compute in the simulator).
    std::string slowed_cluster_path = cluster_path;
    double slowed_noise = calibration.noise;
    if (!slowed_rows.empty() && !options.calibrate_with_des) {
      slowed_cluster_path = dir + "/holdout-" + network + "-des.json";
      const auto des = calibrate_network(request, calibration_profiles, true, options, slowed_cluster_path);
      slowed_noise = des.noise;
      nlohmann::json des_unknowns = nlohmann::json::object();
      out << "  " << network << ", for the rows with a straggler: calibrated by the discrete-event simulator (fit "
          << signed_percent(des.rms_relative_error).substr(1) << " rms):" << unknowns_text(des, des_unknowns) << "\n";
      network_json["straggler_calibration"] = {
          {"cluster", slowed_cluster_path}, {"rms_relative_error", des.rms_relative_error}, {"unknowns", des_unknowns}};
    }
    for (const auto* row : slowed_rows) {
      const double measured = (*row)["measured_samples_per_second"].get<double>();
      const auto range = des_prediction(predict_des, *row, slowed_cluster_path, slowed_noise);
      const double error = range.predicted / measured - 1;
      slowed_errors[method_of(*row)].push_back(std::fabs(error));
      const bool inside = measured >= range.low && measured <= range.high;
      ++slowed_ranged;
      if (inside) ++slowed_inside;
      report["rows"].push_back({{"configuration", (*row)["configuration"]},
                                {"network", network},
                                {"algorithm", method_of(*row)},
                                {"workers", (*row)["workers"]},
                                {"straggler", (*row)["straggler"]},
                                {"measured_samples_per_second", measured},
                                {"predicted_samples_per_second", range.predicted},
                                {"predicted_range", {range.low, range.high}},
                                {"inside_range", inside},
                                {"error", error}});
    }
    if (split.held_out.empty()) continue;
    std::vector<sim::MeasuredPoint> held;
    std::vector<const nlohmann::json*> held_rows;
    std::vector<std::string> method;  // of each held-out row
    std::vector<sim::ModelProfile> held_profiles;
    for (const size_t i : split.held_out) {
      held_rows.push_back(network_rows[i]);
      held.push_back(point_of_row(*network_rows[i]));
      method.push_back(method_of(*network_rows[i]));
      held_profiles.push_back(profile_of(*network_rows[i]));
    }
    const auto model = sim::analytical_model_of(held, held_profiles, ignored);
    std::map<int64_t, std::vector<size_t>> groups;  // worker count -> indices into `held`
    std::vector<double> predicted;
    for (size_t i = 0; i < held.size(); ++i) {
      // What the calibrated cluster and those that fit the calibration rows as well predict, and the measurement's
      // own noise beside.
      PredictedRange range;
      if (options.des_for_every_row && predict_des) {
        range = des_prediction(predict_des, *held_rows[i], cluster_path, calibration.noise);
      } else {
        range.predicted = range.low = range.high = model(held[i], calibration.cluster);
        for (const auto& other : calibration.consistent) {
          const double rate = model(held[i], other);
          range.low = std::min(range.low, rate);
          range.high = std::max(range.high, rate);
        }
        range.widen(calibration.noise);
      }
      predicted.push_back(range.predicted);
      const double error = predicted[i] / held[i].samples_per_second - 1;
      errors[method[i]].push_back(std::fabs(error));
      groups[held[i].workers].push_back(i);
      const double low = range.low, high = range.high;
      const bool inside = held[i].samples_per_second >= low && held[i].samples_per_second <= high;
      ++rows_ranged;
      if (inside) ++rows_inside;
      range_widths += (high - low) / (2 * predicted[i]);
      report["rows"].push_back({{"configuration", held[i].origin},
                                {"network", network},
                                {"algorithm", method[i]},
                                {"workers", held[i].workers},
                                {"measured_samples_per_second", held[i].samples_per_second},
                                {"predicted_samples_per_second", predicted[i]},
                                {"predicted_range", {low, high}},
                                {"inside_range", inside},
                                {"error", error}});
    }
    nlohmann::json group_json = nlohmann::json::array();
    for (const auto& [w, members] : groups) {
      std::vector<double> measured_rates, predicted_rates;
      for (const size_t i : members) {
        measured_rates.push_back(held[i].samples_per_second);
        predicted_rates.push_back(predicted[i]);
      }
      const double tau = sim::kendall_tau(predicted_rates, measured_rates);
      const auto& top_measured = method[members[sim::index_of_largest(measured_rates)]];
      const auto& top_predicted = method[members[sim::index_of_largest(predicted_rates)]];
      nlohmann::json group = {{"workers", w},
                              {"algorithms", members.size()},
                              {"kendall_tau", tau},
                              {"top_measured", top_measured},
                              {"top_predicted", top_predicted},
                              {"top_right", top_measured == top_predicted}};
      char line[320];
      std::snprintf(line, sizeof line,
                    "    %lld workers: %zu algorithms, Kendall's tau %.2f, fastest %s, predicted %s%s",
                    static_cast<long long>(w), members.size(), tau, top_measured.c_str(), top_predicted.c_str(),
                    top_measured == top_predicted ? "" : " (wrong)");
      out << line;
      std::vector<const nlohmann::json*> member_rows;
      for (const size_t i : members) member_rows.push_back(held_rows[i]);
      if (const auto repeats = repeats_of(member_rows)) {
        const auto agreement = sim::repeat_agreement(*repeats);
        const auto settled = sim::settled_pairs(*repeats, predicted_rates);
        const double tau_against_runs = sim::kendall_tau_against_each_repeat(*repeats, predicted_rates);
        group["repeats"] = {
            {"kendall_tau", agreement.kendall_tau}, {"prediction_kendall_tau_against_each_repeat", tau_against_runs},
            {"deviation", agreement.deviation},     {"same_top", agreement.same_top},
            {"settled_pairs", settled.settled},     {"settled_pairs_predicted_alike", settled.predicted_alike}};
        std::snprintf(line, sizeof line,
                      "; between repeats: tau %.2f, %.1f%% from their median, fastest %s; the prediction against "
                      "each repeat: tau %.2f; of the %lld pairs every repeat orders alike, %lld predicted so",
                      agreement.kendall_tau, 100 * agreement.deviation, agreement.same_top ? "the same" : "differs",
                      tau_against_runs, static_cast<long long>(settled.settled),
                      static_cast<long long>(settled.predicted_alike));
        out << line;
        repeats_tau_sum += agreement.kendall_tau;
        prediction_against_runs_tau_sum += tau_against_runs;
        settled_total += settled.settled;
        settled_alike += settled.predicted_alike;
        ++groups_repeated;
        if (agreement.kendall_tau >= kRankingTarget) ++groups_repeats_ranked;
        if (agreement.same_top) ++groups_repeats_same_top;
      }
      out << "\n";
      group_json.push_back(group);
      ++groups_scored;
      if (tau >= kRankingTarget) ++groups_ranked;
      if (top_measured == top_predicted) ++groups_top_right;
    }
    network_json["groups"] = group_json;
  }
  report["mape"] = mean_error_by_algorithm(errors, "  held-out MAPE:", out);
  if (groups_scored > 0) {
    // One line against the figures bench/README judges the calibration by (issue 25's targets).
    int64_t within = 0;
    double sum = 0;
    for (const auto& [algorithm, figures] : report["mape"].items()) {
      const double mape = figures["mape"].get<double>();
      sum += mape;
      if (mape <= kErrorTarget) ++within;
    }
    const auto algorithms = static_cast<int64_t>(report["mape"].size());
    const double mean = sum / static_cast<double>(std::max<int64_t>(1, algorithms));
    report["summary"] = {{"algorithms", algorithms},
                         {"algorithms_within_15_percent", within},
                         {"mean_mape", mean},
                         {"groups", groups_scored},
                         {"groups_with_tau_at_least_0_8", groups_ranked},
                         {"groups_with_the_fastest_picked", groups_top_right}};
    char line[320];
    std::snprintf(line, sizeof line,
                  "  summary: %lld of %lld algorithms within 15%% (mean %.1f%%); Kendall's tau >= 0.8 in %lld of %lld "
                  "groups; the fastest picked in %lld of %lld\n",
                  static_cast<long long>(within), static_cast<long long>(algorithms), 100 * mean,
                  static_cast<long long>(groups_ranked), static_cast<long long>(groups_scored),
                  static_cast<long long>(groups_top_right), static_cast<long long>(groups_scored));
    out << line;
    report["summary"]["rows"] = rows_ranged;
    report["summary"]["rows_inside_range"] = rows_inside;
    const double mean_width = range_widths / static_cast<double>(std::max<int64_t>(1, rows_ranged));
    report["summary"]["mean_range_half_width"] = mean_width;
    std::snprintf(line, sizeof line,
                  "  held-out rows inside the range the calibration allows (the clusters that fit its rows within "
                  "their noise, and the row's own noise): %lld of %lld, the ranges +-%.1f%% of the prediction on "
                  "average\n",
                  static_cast<long long>(rows_inside), static_cast<long long>(rows_ranged), 100 * mean_width);
    out << line;
    if (groups_repeated > 0) {
      // The same figures for the measurements against themselves: what no prediction can beat.
      const double repeats_tau = repeats_tau_sum / static_cast<double>(groups_repeated);
      const double prediction_against_runs_tau = prediction_against_runs_tau_sum / static_cast<double>(groups_repeated);
      report["summary"]["repeats"] = {{"groups", groups_repeated},
                                      {"groups_with_tau_at_least_0_8", groups_repeats_ranked},
                                      {"groups_with_the_same_fastest", groups_repeats_same_top},
                                      {"mean_kendall_tau", repeats_tau},
                                      {"prediction_mean_kendall_tau_against_each_repeat", prediction_against_runs_tau},
                                      {"settled_pairs", settled_total},
                                      {"settled_pairs_predicted_alike", settled_alike}};
      std::snprintf(line, sizeof line,
                    "  the measurements' own agreement (repeats of the same runs): Kendall's tau >= 0.8 in %lld of "
                    "%lld groups; the same fastest in %lld of %lld\n",
                    static_cast<long long>(groups_repeats_ranked), static_cast<long long>(groups_repeated),
                    static_cast<long long>(groups_repeats_same_top), static_cast<long long>(groups_repeated));
      out << line;
      // Like against like: a single run ranked by the prediction, and by another run of the same configurations.
      std::snprintf(line, sizeof line,
                    "  one run's ranking predicted: mean Kendall's tau %.2f against each repeat, where one repeat "
                    "ranks another with %.2f\n",
                    prediction_against_runs_tau, repeats_tau);
      out << line;
      // The ranking judged where the measurements can judge it: the pairs whose order no repeat contradicts.
      std::snprintf(
          line, sizeof line,
          "  of the %lld pairs of algorithms every repeat orders alike, the prediction orders %lld alike "
          "(%.0f%%)\n",
          static_cast<long long>(settled_total), static_cast<long long>(settled_alike),
          settled_total > 0 ? 100.0 * static_cast<double>(settled_alike) / static_cast<double>(settled_total) : 0.0);
      out << line;
    }
  }
  if (!slowed_errors.empty()) {
    report["straggler_mape"] = mean_error_by_algorithm(
        slowed_errors,
        "  held-out MAPE of the rows with a straggler (discrete-event simulator, calibrated cluster):", out);
    report["straggler_rows"] = slowed_ranged;
    report["straggler_rows_inside_range"] = slowed_inside;
    out << "  rows with a straggler inside the range the calibration allows: " << slowed_inside << " of "
        << slowed_ranged << "\n";
  }
  text = out.str();
  return report;
}

}  // namespace distsgd::experiment
