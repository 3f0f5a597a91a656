#include "distsgd/cli/calibrate_command.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/experiment/measured_cpu.hpp"
#include "distsgd/experiment/run_directory.hpp"
#include "distsgd/sim/analytical/prediction.hpp"
#include "distsgd/sim/calibration/calibration.hpp"
#include "distsgd/sim/calibration/measured_point_model.hpp"
#include "distsgd/sim/calibration/measured_points.hpp"
#include "distsgd/sim/simulator_settings.hpp"
#include "distsgd/train/options.hpp"
#include "distsgd/train/simulator_flags.hpp"

namespace distsgd::cli {
namespace {

// A run directory of distsgd train: its algorithm, workers and settings (config.json) and its throughput: steady
// state from trace.json where the run was traced (as validate measures: each worker from iteration `warmup` on,
// while every worker trains), else summary.json's over the whole run, first iterations included.
sim::MeasuredPoint point_of_run(const std::string& dir, const nlohmann::json& summary, const sim::ModelProfile& profile,
                                int64_t warmup, std::string& measured_from) {
  const auto config = read_json_file(dir + "/config.json", "run configuration");
  require(!summary.value("virtual", false),
          "--runs " + dir + ": a virtual run (its throughput is the simulator's own, not a measurement)");
  require(summary.contains("samples_per_second") && summary["samples_per_second"].is_number() &&
              summary["samples_per_second"].get<double>() > 0,
          "--runs " + dir + ": summary.json has no positive samples_per_second");
  sim::MeasuredPoint p;
  p.origin = dir;
  p.algorithm = config.value("algorithm", std::string());
  p.workers = config.value("workers", int64_t{0});
  measured_from = "summary.json";
  p.samples_per_second = summary["samples_per_second"].get<double>();
  if (std::filesystem::exists(dir + "/trace.json")) {
    try {
      p.samples_per_second = experiment::steady_throughput(dir, summary, warmup).samples_per_second;
    } catch (const Error& e) {
      throw Error("--runs " + dir + ": " + e.what());
    }
    measured_from = "trace.json";
  }
  const std::string model = config.value("model", std::string());
  const int64_t batch = config.value("batch_size", int64_t{0});
  require(model == profile.model && batch == profile.batch_size,
          "--runs " + dir + ": a run of " + model + " at batch " + std::to_string(batch) + ", the profile is of " +
              profile.model + " at batch " + std::to_string(profile.batch_size) + " (one profile per calibration)");
  p.flags = train::simulator_flags_of_run(config);
  return p;
}

// What a run's communication cost its workers' cores per byte moved (a byte sent and one received), the figure
// calibrate fits or measures as communication_cpu: the CPU per iteration of the threads besides the training thread
// (summary.json's cpu_after_warmup; the loader's share included, so a little above the slope calibrate measures
// over several runs) over twice the bytes sent; from a run before those figures, the process CPU per iteration beyond
// the compute's wall time (first iterations included). Null without the figures (a single worker, nothing sent);
// negative where the compute's wall time exceeded the process's CPU (it was descheduled).
nlohmann::json communication_cpu_of_run(const nlohmann::json& summary) {
  const double steps = summary.value("steps", 0.0);
  if (steps <= 0) return nullptr;
  const double bytes = summary.value("bytes_sent_per_worker", 0.0) / steps;
  if (bytes <= 0) return nullptr;
  const auto after = summary.find("cpu_after_warmup");
  if (after != summary.end() && after->is_object()) {
    return (*after)["other_threads_seconds_per_iteration"].get<double>() / (2 * bytes);
  }
  const auto cpu = summary.find("cpu_seconds_per_iteration");
  if (cpu == summary.end() || !cpu->is_number()) return nullptr;
  const auto phases = summary.value("seconds_per_iteration", nlohmann::json::object());
  double compute = 0;
  for (const char* phase : {"data_wait", "forward", "backward", "update"}) compute += phases.value(phase, 0.0);
  return (cpu->get<double>() - compute) / (2 * bytes);
}

std::string figure(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

// "1e-07 (the search's limit: the points do not bound it below) to 3.3e-05".
std::string range_text(const sim::FittedUnknown& u) {
  std::string text = figure(u.low);
  if (u.low_open) text += " (the search's limit: the points do not bound it below)";
  text += " to " + figure(u.high);
  if (u.high_open) text += " (the search's limit: the points do not bound it above)";
  if (u.low_open || u.high_open) text += "; to bound it, measure " + sim::what_determines(u.unknown);
  return text;
}

// A typed point's flag that neither train nor simulate declares is a typo ("--servrs 2"), not a setting the
// simulator may ignore as it ignores train's --lr: refused with its line, before the fit.
void check_point_flags(const std::vector<sim::MeasuredPoint>& points) {
  std::set<std::string> train_flags;
  for (const auto& spec : train::train_options()) train_flags.insert(spec.flag);
  for (const auto& p : points) {
    for (const auto& flag : p.flags) {
      require(flag.rfind("--", 0) != 0 || train_flags.count(flag) || sim::simulator_takes_flag(flag),
              p.origin + ": flags: '" + flag + "' is not a flag of distsgd train or simulate");
    }
  }
}

}  // namespace

CLI::App* add_calibrate_command(CLI::App& app, CalibrateCommand& c) {
  auto* cmd = app.add_subcommand(
      "calibrate",
      "fit the cluster figures no data sheet gives (the links' efficiency, per-message alpha, compute slow-down, "
      "per-iteration overhead, a parameter server's processing costs) to measured throughput, and write a cluster "
      "description that simulate, study, advise and --virtual read; prints every point's residual and which "
      "figures the points determine (README: \"Calibrating for your cluster\")");
  cmd->add_option("--points", c.points,
                  "CSV of measured points: a header naming the columns algorithm,workers,samples_per_second and "
                  "optionally flags (the algorithm's settings as train flags, e.g. \"--servers 2\")");
  cmd->add_option("--runs", c.runs,
                  "run directories of distsgd train (config.json; the throughput from trace.json where the run was "
                  "traced, else summary.json)")
      ->expected(1, -1);
  cmd->add_option("--profile", c.profile, "profile JSON of the runs' model and batch size (distsgd profile)")
      ->required();
  cmd->add_option("--cluster", c.cluster, "the base: a preset (distsgd simulate --list-clusters) or a JSON file")
      ->capture_default_str();
  cmd->add_option("--fit", c.fit,
                  "the unknowns to fit, comma-separated: compute_scale, communication_cpu (a base with "
                  "shared_cores only), link_efficiency, alpha, intra_node_efficiency, iteration_overhead, "
                  "server_seconds_per_byte, "
                  "server_seconds_per_request, interference_alpha (default: each the points determine, in that "
                  "order); a named one the points do not determine is refused")
      ->delimiter(',');
  cmd->add_option("--noise", c.noise,
                  "the points' relative noise (one standard deviation; 0.02: 2%): each fitted unknown's range is "
                  "the values that fit the points within it (their summed squared error grows by at most 4 noise^2; "
                  "the fit's own residual stands in where larger), and simulate, study and advise predict over the "
                  "clusters at the ranges' ends too; 0: no ranges")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--allreduce-latency", c.allreduce_latency,
                  "how an allreduce's start-ups grow with its P workers in the library the runs used: ring (Gloo, "
                  "NCCL's rings: 2(P-1)) or tree (NCCL >= 2.4's double binary trees: 2 log2 P); points at a few "
                  "workers rarely tell them apart, yet at many workers they differ by far (default: the base's, "
                  "ring for every preset)")
      ->check(CLI::IsMember(enum_name_list<sim::ClusterDescription::AllreduceLatency>()));
  cmd->add_option("--server-placement", c.server_placement,
                  "where the measured system's parameter servers ran: own_links (each behind a link of its own, as "
                  "distsgd's) or worker_nodes (one on each worker node, sharing its link: TensorFlow's distributed "
                  "runs, BytePS); the calibrated file keeps it (default: the base's)")
      ->check(CLI::IsMember(enum_name_list<sim::ClusterDescription::ServerPlacement>()));
  cmd->add_option("--fidelity", c.fidelity,
                  "the model fitted to the points: analytical (the closed forms: a fit takes seconds) or des (the "
                  "discrete-event simulator, as simulate --fidelity des and the virtual cluster predict: each "
                  "evaluation simulates every point, so a fit takes seconds to minutes; it also fits runs with a "
                  "straggler, --slowdown)")
      ->check(CLI::IsMember({"analytical", "des"}))
      ->capture_default_str();
  cmd->add_option("--iterations", c.iterations,
                  "with --fidelity des: iterations simulated per point and evaluation, after 10 of warm-up (more: "
                  "steadier rates, a slower fit; default 60)")
      ->check(CLI::Range(int64_t{10}, int64_t{100000}));
  cmd->add_option("--warmup", c.warmup,
                  "with --runs: iterations of every worker left out of a traced run's throughput (train --trace: "
                  "steady state from trace.json, as validate measures; a run without a trace gives summary.json's, "
                  "over the whole run)")
      ->check(CLI::Range(int64_t{0}, int64_t{1000000}))
      ->capture_default_str();
  cmd->add_option("--out", c.out, "the calibrated cluster description (JSON)")->required();
  return cmd;
}

int run_calibrate(const CalibrateCommand& c) {
  require(!c.points.empty() || !c.runs.empty(), "calibrate: give --points FILE.csv or --runs DIR... (or both)");
  require(c.iterations == 0 || c.fidelity == "des",
          "calibrate: --iterations is the discrete-event simulator's (add --fidelity des)");
  const auto profile = sim::load_model_profile(c.profile);
  sim::CalibrationRequest request;
  request.base = sim::load_cluster(c.cluster);
  if (!c.allreduce_latency.empty()) {
    request.base.allreduce_latency = sim::allreduce_latency_named(c.allreduce_latency, "--allreduce-latency: ");
  }
  if (!c.server_placement.empty()) {
    request.base.server_placement = sim::server_placement_named(c.server_placement, "--server-placement: ");
  }
  for (const auto& name : c.fit) request.unknowns.push_back(sim::unknown_named(name));
  request.noise = c.noise;
  // Runs of distsgd train reduce over Gloo's ring; points from another system may have used trees (NCCL).
  request.explore_allreduce_latency = c.allreduce_latency.empty() && !c.points.empty();
  if (!c.points.empty()) {
    request.points = sim::read_points_csv(c.points);
    check_point_flags(request.points);
  }
  std::vector<nlohmann::json> measured_cpu(request.points.size(), nullptr);  // of each point; CSV points: none
  std::vector<std::string> measured_from(request.points.size(), "points");   // where each throughput came from
  for (const auto& dir : c.runs) {
    const auto summary = read_json_file(dir + "/summary.json", "run summary (did the run finish?)");
    request.points.push_back(point_of_run(dir, summary, profile, c.warmup, measured_from.emplace_back()));
    measured_cpu.push_back(communication_cpu_of_run(summary));
  }
  // On cores the ranks share, the runs measure the communication's CPU themselves (their threads besides the
  // training thread): the automatic choice keeps that figure rather than fitting one beside the compute.
  const auto communication_cpu =
      c.fit.empty() ? experiment::hold_measured_communication_cpu(request, c.runs) : std::nullopt;
  // And the compute's: what a worker's iteration takes of the cores where more workers compute than there are.
  const auto compute_cpu = experiment::hold_measured_compute_cpu(request, c.runs, sim::compute_seconds(profile));

  std::set<std::string> ignored;
  const std::vector<sim::ModelProfile> profiles(request.points.size(), profile);
  const bool des = c.fidelity == "des";
  sim::DesPointOptions des_options;
  if (c.iterations > 0) des_options.iterations = c.iterations;
  const auto model = des ? sim::des_model_of(request.points, profiles, ignored, des_options)
                         : sim::analytical_model_of(request.points, profiles, ignored);
  if (des) {
    sim::search_as_for_des(request);
    request.progress = &std::cerr;  // minutes: say how far it got
  }
  const auto result = sim::calibrate(request, model);

  std::cout << "calibration of " << request.base.name << " for " << profile.model << " (batch " << profile.batch_size
            << " per worker) from " << request.points.size() << " points"
            << (des ? ", each simulated by the discrete-event simulator (" + std::to_string(des_options.iterations) +
                          " iterations)"
                    : std::string())
            << "\n";
  if (!ignored.empty()) {
    std::cout << "  flags the simulator does not take (ignored): "
              << join(std::vector<std::string>(ignored.begin(), ignored.end())) << "\n";
  }
  if (request.base.allreduce_fit.processes > 0) {
    std::cout << "  the base's measured allreduce fit is replaced by the fitted links\n";
  }
  if (c.noise > 0) {
    std::cout << "  ranges: the values that fit the points within a noise of " << figure(100 * result.noise) << "%"
              << (result.noise > c.noise ? " (the fit's own residual, larger than --noise)" : " (--noise)") << "\n";
  }
  const bool tree = result.cluster.allreduce_latency == sim::ClusterDescription::AllreduceLatency::kTree;
  std::cout << "  an allreduce's start-ups: a " << (tree ? "tree's 2 log2(P)" : "ring's 2(P-1)")
            << (!c.allreduce_latency.empty()                                         ? " (--allreduce-latency)"
                : result.cluster.allreduce_latency != request.base.allreduce_latency ? " (the points')"
                                                                                     : " (the base's)")
            << "\n";
  if (!result.allreduce_latency_note.empty()) std::cout << "    " << result.allreduce_latency_note << "\n";
  nlohmann::json unknowns = nlohmann::json::array();
  for (const auto& u : result.unknowns) {
    std::cout << "  " << (u.fitted ? "fitted   " : "not fitted") << " " << sim::name_of(u.unknown) << " = "
              << figure(u.value) << (u.note.empty() ? "" : " (" + u.note + ")") << "\n";
    nlohmann::json entry = {
        {"name", sim::name_of(u.unknown)}, {"value", u.value}, {"fitted", u.fitted}, {"note", u.note}};
    if (u.fitted && c.noise > 0) {
      std::cout << "             within the points' noise: " << range_text(u) << "\n";
      entry["consistent_range"] = {
          {"low", u.low}, {"high", u.high}, {"low_open", u.low_open}, {"high_open", u.high_open}};
    }
    unknowns.push_back(entry);
  }
  if (communication_cpu) {
    std::cout << "  communication_cpu measured from the runs' threads besides the training thread "
                 "(summary.json's cpu_after_warmup, "
              << communication_cpu->workers
              << " workers against the bytes each sent): " << figure(1e9 * communication_cpu->seconds_per_byte)
              << " ns per byte moved\n";
  }
  if (compute_cpu) {
    std::cout << "  compute_cpu_scale measured from the runs' training threads (the median of " << compute_cpu->workers
              << " workers): " << figure(1e3 * compute_cpu->seconds) << " ms an iteration, x"
              << figure(compute_cpu->scale)
              << " the profile's compute: what a worker takes of the shared cores where more workers compute than "
                 "there are cores\n";
  }
  // Beside the fitted or measured figure, what each run measured on its own.
  std::string measured_text;
  for (size_t i = 0; i < request.points.size(); ++i) {
    if (measured_cpu[i].is_null()) continue;
    // Below zero is noise (descheduled compute over few bytes), not a figure.
    const double seconds_per_byte = measured_cpu[i].get<double>();
    measured_text += " " + request.points[i].algorithm + "-w" + std::to_string(request.points[i].workers) + " " +
                     (seconds_per_byte < 0 ? std::string("<0") : figure(1e9 * seconds_per_byte));
  }
  if (!measured_text.empty()) {
    std::cout
        << "  each run's CPU besides its training threads, ns per byte moved (summary.json; compare communication_cpu):"
        << measured_text << "\n";
  }
  const auto runs_from = [&](const std::string& source) {
    return std::count(measured_from.begin(), measured_from.end(), source);
  };
  if (!c.runs.empty()) {
    std::cout << "  the runs' throughput: " << runs_from("trace.json")
              << " steady (trace.json, each worker from iteration " << c.warmup << " on, while every worker trains), "
              << runs_from("summary.json")
              << " over the whole run (summary.json: no trace; train --trace times them steady)\n";
  }
  std::cout << "  point                                       algorithm  workers  measured  predicted  error\n";
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < request.points.size(); ++i) {
    const auto& p = request.points[i];
    const double error = result.predicted[i] / p.samples_per_second - 1;
    char line[256];
    std::snprintf(line, sizeof line, "  %-42s  %-9s  %7lld  %8.1f  %9.1f  %+5.1f%%\n",
                  p.origin.size() > 42 ? ("..." + p.origin.substr(p.origin.size() - 39)).c_str() : p.origin.c_str(),
                  p.algorithm.c_str(), static_cast<long long>(p.workers), p.samples_per_second, result.predicted[i],
                  100 * error);
    std::cout << line;
    rows.push_back({{"origin", p.origin},
                    {"algorithm", p.algorithm},
                    {"workers", p.workers},
                    {"flags", join(p.flags, " ")},
                    {"measured_samples_per_second", p.samples_per_second},
                    {"measured_from", measured_from[i]},
                    {"predicted_samples_per_second", result.predicted[i]},
                    {"relative_error", error},
                    {"measured_communication_cpu_seconds_per_byte", measured_cpu[i]}});
  }
  std::cout << "  rms relative error of the fit: " << figure(100 * result.rms_relative_error) << "%\n";

  auto cluster = result.cluster;
  cluster.name = request.base.name + "-calibrated";
  cluster.source = "distsgd calibrate of " + std::to_string(request.points.size()) + " points on " + request.base.name +
                   " (" + request.base.source + ")";
  auto json = sim::to_json(cluster);
  json["calibration"] = {{"base", request.base.name},
                         {"profile", c.profile},
                         {"unknowns", unknowns},
                         {"points", rows},
                         {"rms_relative_error", result.rms_relative_error},
                         {"fidelity", c.fidelity},
                         {"allreduce_latency_note", result.allreduce_latency_note}};
  if (communication_cpu) {
    json["calibration"]["measured_communication_cpu"] = experiment::to_json(*communication_cpu);
  }
  if (compute_cpu) json["calibration"]["measured_compute_cpu"] = experiment::to_json(*compute_cpu);
  // Each end of a fitted unknown's range, with the others re-fitted there: simulate predicts over them too.
  if (c.noise > 0) sim::add_consistent_clusters(json["calibration"], result, cluster);
  write_json_atomically(c.out, json);
  std::cout << "cluster: " << c.out << " (distsgd simulate --cluster " << c.out << ")\n";
  return 0;
}

}  // namespace distsgd::cli
