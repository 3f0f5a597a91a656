#include "distsgd/experiment/validation.hpp"

#include "distsgd/experiment/validate_holdout.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "distsgd/cluster/link_spec.hpp"
#include "distsgd/cluster/network_namespace.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/host_cores.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/core/log.hpp"
#include "distsgd/core/rank_factor.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/experiment/algorithm_recipes.hpp"
#include "distsgd/experiment/forwarded_flags.hpp"
#include "distsgd/experiment/profile_in_process.hpp"
#include "distsgd/experiment/resumable_step.hpp"
#include "distsgd/experiment/run_directory.hpp"
#include "distsgd/experiment/self_command.hpp"
#include "distsgd/experiment/simulate_in_process.hpp"
#include "distsgd/experiment/study_cell_record.hpp"
#include "distsgd/experiment/study_grid.hpp"
#include "distsgd/experiment/study_runner.hpp"
#include "distsgd/sim/calibration/holdout.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "distsgd/sim/platform/model_profile.hpp"
#include "distsgd/train/options.hpp"

namespace distsgd::experiment {

namespace {

namespace fs = std::filesystem;

struct Straggler {
  std::string text = "none";  // as train's --slowdown takes it
  int64_t rank = -1;
  double factor = 1;

  bool none() const { return rank < 0; }
  std::string label() const {
    if (none()) return "none";
    std::string factor_text = text.substr(text.find(':') + 1);
    return "slow" + std::to_string(rank) + "x" + factor_text;
  }
};

Straggler parse_straggler(const std::string& text) {
  Straggler s;
  if (text == "none") return s;
  try {
    std::tie(s.rank, s.factor) = parse_rank_factor("--straggler", text);
  } catch (const Error&) {
    throw Error("--straggler: expected none or RANK:FACTOR (e.g. 1:4), got '" + text + "'");
  }
  require(s.rank >= 0 && s.factor >= 1, "--straggler " + text + ": the rank must be >= 0 and the factor >= 1");
  s.text = text;
  return s;
}

struct Configuration {
  AlgorithmRecipe recipe;
  int64_t workers = 0;
  int64_t servers = 0;  // 0 for the algorithms without parameter servers
  std::string network;  // loopback, or train's --net
  Straggler straggler;
  int64_t threads = 1;

  std::string name() const {
    return recipe.name() + (servers > 0 ? "-s" + std::to_string(servers) : "") + "-w" + std::to_string(workers) + "-" +
           network + "-" + straggler.label();
  }
  std::string description() const {
    return recipe.name() + ", " + std::to_string(workers) + " workers" +
           (servers > 0 ? " + " + std::to_string(servers) + " server(s)" : "") + ", " + network + ", " +
           (straggler.none() ? "no straggler"
                             : "worker " + std::to_string(straggler.rank) + " at x" +
                                   straggler.text.substr(straggler.text.find(':') + 1));
  }
};

// The cluster of this host's loopback for `workers` processes, fitted by `distsgd commbench --cluster-out` (send/recv
// for alpha and the links, the allreduce fit for AR-SGD's ring, --incast for the servers' links, --busy-delivery for
// the messages that wait for a busy receiver when the run's ranks fill the cores).
std::string loopback_cluster(const std::string& dir, int64_t workers) {
  const std::string base = dir + "/clusters/loopback-w" + std::to_string(workers);
  const std::string cluster = base + ".json", raw = base + "-commbench.json";
  const std::vector<std::string> args = {
      "commbench", "--processes", std::to_string(workers), "--max-mb", "16", "--repeats",
      "10",        "--incast",    "--busy-delivery",       "--out",    raw,  "--cluster-out",
      cluster};
  const ResumableStep step(base + ".step.json", base + ".log");
  step.run(args, fs::exists(cluster), "commbench on loopback (" + std::to_string(workers) + " processes)");
  sim::load_cluster(cluster);  // a clear error now rather than one per simulation
  return cluster;
}

// "" when the emulated cluster can be made here; otherwise the reason (one line).
std::string emulated_cluster_missing(const std::string& dir, const std::string& network) {
  if (cluster::has_network_admin()) return "";
  // As an ordinary user the launcher may still become root of a user namespace: try the smallest run that builds one.
  const std::string log = dir + "/logs/probe-" + network + ".log";
  const int status = run_self({"commbench", "--processes", "2", "--net", network, "--min-kb", "4", "--max-mb", "1",
                               "--repeats", "1", "--no-send-recv"},
                              log);
  return status == 0 ? "" : error_line_of(log);
}

struct Plan {
  std::vector<AlgorithmRecipe> recipes;
  std::vector<Straggler> stragglers;
  std::map<std::string, std::string> cluster_of_network;  // given with --cluster, or a preset
};

Plan check_flags(const ValidationSettings& c) {
  Plan plan;
  require(!c.out.empty(), "--out: give the directory for the runs and validation.json");
  plan.recipes = recipes_for(c.algorithms, "--algos");
  require(!plan.recipes.empty(), "--algos: give at least one algorithm");
  require(!c.workers.empty(), "--workers: give at least one worker count");
  for (const int64_t w : c.workers) {
    require(w >= 2, "--workers: validation needs at least 2 workers per run, got " + std::to_string(w));
  }
  require(c.iterations >= c.warmup + 10 && c.warmup >= 1,
          "--iterations must exceed --warmup (at least 1) by 10 or more, got --iterations " +
              std::to_string(c.iterations) + " --warmup " + std::to_string(c.warmup));
  require(c.servers >= 1, "--servers must be at least 1, got " + std::to_string(c.servers));
  require(c.profile_repeats >= 3, "--profile-repeats must be at least 3");
  require(c.repeats >= 1, "--repeats must be at least 1, got " + std::to_string(c.repeats));
  require(c.timeout > 0, "--timeout must be positive");
  require(!c.fidelities.empty(), "--fidelity: give analytical, des or both");
  for (const auto& f : c.fidelities) {
    require(f == "analytical" || f == "des", "--fidelity: expected analytical or des, got '" + f + "'");
  }
  require(!c.networks.empty(), "--networks: give at least one network (loopback, or a --net rate such as 1gbit)");
  std::set<std::string> seen;
  for (const auto& n : c.networks) {
    require(seen.insert(n).second, "--networks: '" + n + "' is listed twice");
    if (n != "loopback") cluster::parse_link("--networks", n);
  }
  for (const auto& entry : c.clusters) {
    const auto equals = entry.find('=');
    require(equals != std::string::npos && equals > 0,
            "--cluster: expected NETWORK=FILE or NETWORK=PRESET (e.g. 1gbit=emulated-1gbit), got '" + entry + "'");
    const std::string network = entry.substr(0, equals), cluster = entry.substr(equals + 1);
    require(seen.count(network) > 0, "--cluster " + entry + ": '" + network + "' is not one of --networks");
    sim::load_cluster(cluster);
    plan.cluster_of_network[network] = cluster;
  }
  const auto presets = sim::cluster_preset_names();
  for (const auto& n : c.networks) {
    if (n == "loopback" || plan.cluster_of_network.count(n) > 0) continue;
    const std::string preset = "emulated-" + n;
    require(std::find(presets.begin(), presets.end(), preset) != presets.end(),
            "--networks " + n + ": the simulator has no preset " + preset + "; give --cluster " + n +
                "=FILE (distsgd commbench --net " + n + " measures one)");
    plan.cluster_of_network[n] = preset;
  }
  for (const auto& text : c.stragglers) {
    plan.stragglers.push_back(parse_straggler(text));
    for (const int64_t w : c.workers) {
      require(plan.stragglers.back().rank < w, "--straggler " + text + ": rank " +
                                                   std::to_string(plan.stragglers.back().rank) +
                                                   " is not a worker of the " + std::to_string(w) + "-worker runs");
    }
  }
  if (c.holdout) {
    // It calibrates on the unslowed rows of the smallest worker count and scores the others: both must exist.
    const bool unslowed = plan.stragglers.empty() ||
                          std::any_of(plan.stragglers.begin(), plan.stragglers.end(), [](auto& s) { return s.none(); });
    const bool slowed = std::any_of(plan.stragglers.begin(), plan.stragglers.end(), [](auto& s) { return !s.none(); });
    require(unslowed, "--holdout calibrates on rows without a straggler: add none to --straggler (none,3:2)");
    require(std::set<int64_t>(c.workers.begin(), c.workers.end()).size() >= 2 || slowed,
            "--holdout calibrates on the smallest worker count and scores the others: give two or more (--workers "
            "2,4,8), or rows with a --straggler (--straggler none,3:2)");
  }
  train::validate(c.config);
  return plan;
}

std::vector<Configuration> grid(const ValidationSettings& c, const Plan& plan) {
  const int64_t cores = host_cores();
  std::vector<Configuration> all;
  for (const auto& network : c.networks) {
    for (const int64_t workers : c.workers) {
      for (const auto& straggler : plan.stragglers) {
        for (const auto& recipe : plan.recipes) {
          Configuration k{recipe, workers, recipe.uses_servers() ? c.servers : 0, network, straggler, 1};
          // As train chooses it (optim/threads.cpp): cores / processes on this host, at least 1.
          k.threads = c.config.threads > 0 ? c.config.threads : std::max<int64_t>(1, cores / (workers + k.servers));
          all.push_back(k);
        }
      }
    }
  }
  return all;
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", 100 * fraction);
  return text;
}

// Diagnostics beside the fidelities: each fidelity given the run's own compute time (ana*, des*), so that their error
// is the rest of the model's (communication, synchronisation, contention) and the profile's share of a miss shows.
const std::string kRunComputeSuffix = "-run-compute";

// The fidelity a prediction runs: "des" for "des" and for its diagnostic "des-run-compute".
std::string fidelity_of(const std::string& kind) {
  const size_t n = kind.size(), s = kRunComputeSuffix.size();
  return n > s && kind.compare(n - s, s, kRunComputeSuffix) == 0 ? kind.substr(0, n - s) : kind;
}
bool is_run_compute(const std::string& kind) { return fidelity_of(kind) != kind; }
// The compact name of a prediction: "ana", "des", "ana*", "des*".
std::string abbreviation(const std::string& kind) {
  const std::string fidelity = fidelity_of(kind);
  return (fidelity == "analytical" ? "ana" : fidelity) + (is_run_compute(kind) ? "*" : "");
}
// The table's name of a prediction: a fidelity by its name, a diagnostic by its abbreviation.
std::string short_name(const std::string& kind) { return is_run_compute(kind) ? abbreviation(kind) : kind; }

// The predictions of every row: each fidelity asked for, then each one's run-compute diagnostic.
std::vector<std::string> prediction_kinds(const ValidationSettings& c) {
  std::vector<std::string> kinds = c.fidelities;
  for (const auto& f : c.fidelities) kinds.push_back(f + kRunComputeSuffix);
  return kinds;
}

// The profile with a run's compute: every tensor's forward and backward time scaled so that their sums are the
// run's mean forward and backward per iteration (summary.json); written to `out`.
void write_profile_with_run_compute(const std::string& profile, const nlohmann::json& split, const std::string& out,
                                    nlohmann::json& scale) {
  auto json = read_json_file_if_valid(profile);
  require(json && json->contains("tensors"), profile + ": tensors: missing");
  double forward = 0, backward = 0;
  for (const auto& t : (*json)["tensors"]) {
    forward += t.value("forward_seconds", 0.0);
    backward += t.value("backward_seconds", 0.0);
  }
  require(forward > 0 && backward > 0, profile + ": tensors: no forward or backward time to scale");
  scale = {{"forward", split.value("forward", 0.0) / forward}, {"backward", split.value("backward", 0.0) / backward}};
  for (auto& t : (*json)["tensors"]) {
    t["forward_seconds"] = t.value("forward_seconds", 0.0) * scale["forward"].get<double>();
    t["backward_seconds"] = t.value("backward_seconds", 0.0) * scale["backward"].get<double>();
  }
  write_json_atomically(out, *json);
}

// The cores' worth this host gives ranks computing at once, which every measured run shares: what validate's profile
// measured (profile --ranks-at-once: "compute_capacity"), or the host's core count for a profile without it.
double shared_cores_of(const std::string& profile) {
  const auto json = read_json_file_if_valid(profile);
  if (json && json->contains("compute_capacity")) return (*json)["compute_capacity"].value("cores", 0.0);
  return static_cast<double>(host_cores());
}

// One prediction of a configuration by `distsgd simulate` (`kind`: a fidelity or its run-compute diagnostic), or why
// there is none. Its files are run_dir/prediction-KIND[-TAG].json and simulate-KIND[-TAG].log.
nlohmann::json predict(const ValidationSettings& c, const Configuration& k, const std::string& kind,
                       std::string profile, const std::string& cluster, const std::string& run_dir,
                       const nlohmann::json& row, const std::string& tag = "") {
  const std::string fidelity = fidelity_of(kind);
  nlohmann::json scale;
  if (is_run_compute(kind)) {
    if (!k.straggler.none()) return {{"not_predicted", "a diagnostic of the runs without a straggler"}};
    const std::string scaled = run_dir + "/profile-run-compute.json";
    write_profile_with_run_compute(profile, row["seconds_per_iteration"], scaled, scale);
    profile = scaled;
  }
  std::vector<std::string> args = {"simulate", "--profile", profile, "--cluster", cluster};
  const auto algorithm = simulate_flags_of(k.recipe, std::max<int64_t>(1, k.servers));
  args.insert(args.end(), algorithm.begin(), algorithm.end());
  args.insert(args.end(), {"--workers", std::to_string(k.workers)});
  args.insert(args.end(), {"--fidelity", fidelity});
  if (fidelity == "des") {
    // The simulated run as long as the measured one, warmed up as it is measured (des: --iterations after --warmup).
    args.insert(args.end(), {"--iterations", std::to_string(c.iterations - c.warmup)});
    args.insert(args.end(), {"--warmup", std::to_string(c.warmup)});
    args.insert(args.end(), {"--seed", std::to_string(c.config.seed)});
  }
  if (!k.straggler.none()) args.insert(args.end(), {"--slowdown", k.straggler.text});
  // Every measured run here, loopback or emulated, shares this host's cores: so does the simulated one, at the
  // capacity the profile measured. Not the diagnostics: the run's own forward and backward times already hold the
  // sharing (0 overrides the cluster file's).
  const double cores = is_run_compute(kind) ? 0.0 : shared_cores_of(profile);
  args.insert(args.end(), {"--shared-cores", nlohmann::json(cores).dump()});
  const std::string suffix = tag.empty() ? kind : kind + "-" + tag;
  const std::string out = run_dir + "/prediction-" + suffix + ".json";
  args.insert(args.end(), {"--out", out});
  const std::string log = run_dir + "/simulate-" + suffix + ".log";
  try {
    simulate_in_process(args, out, log);
  } catch (const Error& e) {
    return {{"not_predicted", std::string("simulate failed: ") + e.what()}};
  }
  const auto json = read_json_file_if_valid(out);
  const bool ok = json && json->contains("predictions") && (*json)["predictions"].is_array() &&
                  !(*json)["predictions"].empty() && (*json)["predictions"][0].contains("samples_per_second");
  if (!ok) return {{"not_predicted", out + ": predictions[0].samples_per_second: missing"}};
  const auto& row_predicted = (*json)["predictions"][0];
  nlohmann::json prediction = {{"samples_per_second", row_predicted["samples_per_second"].get<double>()},
                               {"command", command_text(args)},
                               {"file", out}};
  // On a calibrated cluster file: the range of the clusters that fit its points as well.
  if (row_predicted.contains("samples_per_second_range")) {
    prediction["samples_per_second_range"] = row_predicted["samples_per_second_range"];
  }
  if (is_run_compute(kind)) prediction["compute_scale"] = scale;
  return prediction;
}

nlohmann::json settings_json(const ValidationSettings& c);

// The label of repeat `r` (from 1) on the grid's repeat axis, as progress lines and reports name its runs ("repeat 2,
// loopback, workers=4, none, arsgd"; its directory cells/repeat=repeat-2_...): "" where the grid has no such axis
// (one run per configuration).
std::string repeat_label(const ValidationSettings& c, int64_t r) {
  return c.repeats > 1 ? "repeat " + std::to_string(r) : "";
}

// The grid's runs as a study (experiment/study_runner.hpp: one progress line, Ctrl-C and resumption, a per-cell record
// and run directory under DIR/cells/, results.csv and curves.csv for `distsgd report`). Every run has a fixed number
// of iterations, every iteration traced (the steady-state throughput comes from trace.json), one evaluation at the end
// when an epoch is longer than the run. The predictions are validate's own (below), not the study's.
StudySpec validation_study(const ValidationSettings& c, const Plan& plan, const std::set<std::string>& unavailable) {
  std::vector<std::string> base = c.model_flags;
  const auto train_only = c.train_only_flags;
  base.insert(base.end(), train_only.begin(), train_only.end());
  base.insert(base.end(), {"--batch-size", std::to_string(c.config.batch_size), "--max-steps",
                           std::to_string(c.iterations), "--epochs", "1000000", "--trace", "--no-checkpoint",
                           "--progress-seconds", "1000000", "--timeout", std::to_string(c.timeout)});
  GridSpec grid;
  grid.base = flag_list_of(base);
  Axis network{"network", {}}, workers{"--workers", {}}, straggler{"straggler", {}}, algorithm{"algorithm", {}};
  for (const auto& n : c.networks) {
    if (unavailable.count(n) > 0) continue;
    network.values.push_back({n, n == "loopback" ? FlagList{} : FlagList{{"--net", {n}}}});
  }
  for (const int64_t w : c.workers) workers.values.push_back({std::to_string(w), {{"--workers", {std::to_string(w)}}}});
  for (const auto& s : plan.stragglers) {
    straggler.values.push_back({s.label(), s.none() ? FlagList{} : FlagList{{"--slowdown", {s.text}}}});
  }
  for (const auto& recipe : plan.recipes) {
    algorithm.values.push_back({recipe.name(), flag_list_of(train_flags_of(recipe, c.servers))});
  }
  // The order of grid(): network slowest, algorithm fastest; a repeat after the whole grid, so that the host's drift
  // over the grid shows between the repeats rather than in one configuration's.
  grid.axes = {network, workers, straggler, algorithm};
  if (c.repeats > 1) {
    Axis repeat{"repeat", {}};
    for (int64_t r = 1; r <= c.repeats; ++r) repeat.values.push_back({repeat_label(c, r), {}});
    grid.axes.insert(grid.axes.begin(), repeat);
  }
  StudySpec spec;
  spec.name = "validation";
  spec.description = "distsgd validate's runs (validation.json compares them with the simulator)";
  spec.simulation.enabled = false;
  spec.grids = {grid};
  spec.command = "validate";
  spec.json = nlohmann::ordered_json(settings_json(c));
  return spec;
}

// The cell of a configuration's repeat `r`.
StudyCell& cell_of(std::vector<StudyCell>& cells, const Configuration& k, const std::string& repeat) {
  for (auto& cell : cells) {
    if (cell.axis_label("network") == k.network && cell.axis_label("--workers") == std::to_string(k.workers) &&
        cell.axis_label("straggler") == k.straggler.label() && cell.axis_label("algorithm") == k.recipe.name() &&
        cell.axis_label("repeat") == repeat)
      return cell;
  }
  throw Error("validate: no run of " + k.description());  // cannot happen: the study is made from the same grid
}

// Reads a configuration's finished run into `row` (throws Error naming why there is none).
void read_measurement(const ValidationSettings& c, const StudyCell& cell, const std::string& run_dir,
                      const sim::ModelProfile& profile, nlohmann::json& row) {
  const auto record = read_cell_record(c.out, cell);
  if (record && record->status == "failed") throw Error(record->reason);
  const auto summary = finished_summary(run_dir);
  require(record.has_value() && summary.has_value(), run_dir + "/summary.json: missing or incomplete after training");
  const auto steady = steady_throughput(run_dir, *summary, c.warmup);
  std::vector<std::string> command{"train"};
  const auto words = cell.arguments();
  command.insert(command.end(), words.begin(), words.end());
  command.insert(command.end(), {"--out", run_dir});
  row["train_command"] = command_text(command);
  row["cell_seconds"] = record->seconds;
  row["measured_samples_per_second"] = steady.samples_per_second;
  row["measured_per_worker"] = steady.per_worker;
  row["timed_iterations_per_worker"] = steady.timed_iterations;
  row["workers_timed_past_the_others"] = steady.workers_timed_past_the_others;
  row["summary_samples_per_second"] = (*summary)["samples_per_second"];
  row["seconds_per_iteration"] = summary->value("seconds_per_iteration", nlohmann::json::object());
  row["test_accuracy"] = summary->value("test_accuracy", nlohmann::json());
  row["train_seconds"] = summary->value("train_seconds", nlohmann::json());
  // Where a prediction misses, compute is the first suspect: the profile's forward + backward (one process alone)
  // against the run's own (every worker's mean; on a shared host the processes share the cores).
  const auto& split = row["seconds_per_iteration"];
  row["profile_compute_seconds"] = profile.forward_seconds() + profile.backward_seconds();
  row["measured_compute_seconds"] = split.value("forward", 0.0) + split.value("backward", 0.0);
  row["train_log"] = cell_log_path(c.out, cell);
}

// `row` with a configuration's measurement: of its one run, or of the run with the median throughput among its
// repeats (its trace, compute and run directory), the median itself as the measured throughput and every repeat's
// beside it. Throws Error naming the first repeat without a measurement.
nlohmann::json measured_row(const ValidationSettings& c, std::vector<StudyCell>& cells, const Configuration& k,
                            const std::set<std::string>& finished_before, const sim::ModelProfile& profile,
                            nlohmann::json row) {
  std::vector<nlohmann::json> repeats;
  bool cached = true;
  for (int64_t r = 1; r <= c.repeats; ++r) {
    const auto& cell = cell_of(cells, k, repeat_label(c, r));
    const std::string run_dir = cell_directory(c.out, cell);
    nlohmann::json repeat = row;
    repeat["run_dir"] = run_dir;
    cached = cached && finished_before.count(cell.id) > 0;
    read_measurement(c, cell, run_dir, profile, repeat);
    repeats.push_back(std::move(repeat));
  }
  if (repeats.size() == 1) {
    repeats.front()["status"] = cached ? "cached" : "trained";
    return repeats.front();
  }
  std::vector<double> measured;
  nlohmann::json run_dirs = nlohmann::json::array();
  for (const auto& repeat : repeats) {
    measured.push_back(repeat["measured_samples_per_second"].get<double>());
    run_dirs.push_back(repeat["run_dir"]);
  }
  std::vector<size_t> order(repeats.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return measured[a] < measured[b]; });
  nlohmann::json median_run = repeats[order[(order.size() - 1) / 2]];
  median_run["measured_samples_per_second"] = sim::median_of(measured);
  median_run["measured_repeats"] = measured;
  median_run["run_dirs"] = run_dirs;
  median_run["status"] = cached ? "cached" : "trained";
  return median_run;
}

nlohmann::json mape_json(const std::vector<double>& errors) {
  if (errors.empty()) return {{"mape", nullptr}, {"rows", 0}};
  double sum = 0;
  for (const double e : errors) sum += e;
  return {{"mape", sum / static_cast<double>(errors.size())}, {"rows", errors.size()}};
}

std::string mape_text(const nlohmann::json& m) {
  if (m["mape"].is_null()) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%% (%d)", 100 * m["mape"].get<double>(), m["rows"].get<int>());
  return text;
}

// Per algorithm (overall and per network) and fidelity: the mean of |predicted - measured| / measured.
nlohmann::json mape_by_algorithm(const ValidationSettings& c, const Plan& plan, const nlohmann::json& rows) {
  nlohmann::json mape = nlohmann::json::object();
  for (const auto& recipe : plan.recipes) {
    std::map<std::string, std::map<std::string, std::vector<double>>> errors;  // network ("" = all) -> fidelity
    for (const auto& row : rows) {
      if (row["algorithm"] != recipe.name() || !row.contains("predictions")) continue;
      for (const auto& item : row["predictions"].items()) {
        const std::string& fidelity = item.key();
        const auto& p = item.value();
        if (!p.contains("error")) continue;
        const double e = std::fabs(p["error"].get<double>());
        errors[""][fidelity].push_back(e);
        errors[row["network"].get<std::string>()][fidelity].push_back(e);
      }
    }
    nlohmann::json entry = {{"family", recipe.family()}, {"target", mape_target(recipe)}};
    for (const auto& f : prediction_kinds(c)) entry[f] = mape_json(errors[""][f]);
    for (const auto& n : c.networks) {
      for (const auto& f : prediction_kinds(c)) entry["by_network"][n][f] = mape_json(errors[n][f]);
    }
    mape[recipe.name()] = entry;
  }
  return mape;
}

// With --repeats: how far a single run is from its configuration's median (measured above), on one line.
std::string repeats_text(const nlohmann::json& rows) {
  double sum = 0, largest = 0;
  int64_t runs = 0, repeats = 0;
  for (const auto& row : rows) {
    if (!row.contains("measured_repeats")) continue;
    for (const double deviation : sim::deviations_from_median(row["measured_repeats"].get<std::vector<double>>())) {
      sum += deviation;
      largest = std::max(largest, deviation);
      ++runs;
    }
    repeats = static_cast<int64_t>(row["measured_repeats"].size());
  }
  if (runs == 0) return "";
  char line[200];
  std::snprintf(line, sizeof line,
                "measured: the median of %lld repeats; a single run is %.1f%% from its median on average (at most "
                "%.1f%%)\n",
                static_cast<long long>(repeats), 100 * sum / static_cast<double>(runs), 100 * largest);
  return line;
}

std::string tables(const ValidationSettings& c, const nlohmann::json& rows, const nlohmann::json& mape) {
  std::ostringstream out;
  char line[256];
  out << "predicted vs measured samples/s (measured: steady state from trace.json, iterations " << c.warmup
      << " on, while every worker trains; error = (predicted - measured) / measured)\n";
  std::snprintf(line, sizeof line, "  %-14s %7s %-9s %-9s %10s", "algo", "workers", "network", "straggler", "measured");
  out << line;
  for (const auto& f : prediction_kinds(c)) {
    std::snprintf(line, sizeof line, " %11s %8s", short_name(f).c_str(), "error");
    out << line;
  }
  out << "\n";
  for (const auto& row : rows) {
    std::snprintf(line, sizeof line, "  %-14s %7lld %-9s %-9s ", row["algorithm"].get<std::string>().c_str(),
                  static_cast<long long>(row["workers"].get<int64_t>()), row["network"].get<std::string>().c_str(),
                  row["straggler"].get<std::string>().c_str());
    out << line;
    if (!row.contains("measured_samples_per_second")) {
      out << "failed: " << row.value("error", std::string()) << "\n";
      continue;
    }
    std::snprintf(line, sizeof line, "%10.0f", row["measured_samples_per_second"].get<double>());
    out << line;
    for (const auto& f : prediction_kinds(c)) {
      const auto& p = row["predictions"][f];
      if (p.contains("samples_per_second")) {
        std::snprintf(line, sizeof line, " %11.0f %8s", p["samples_per_second"].get<double>(),
                      percent(p["error"].get<double>()).c_str());
      } else {
        std::snprintf(line, sizeof line, " %11s %8s", "-", "-");
      }
      out << line;
    }
    out << "\n";
  }
  out << repeats_text(rows);
  out << "\nmean absolute percentage error per algorithm (rows); the issue's target: 10% synchronous, 15% others\n"
      << "(ana*, des*: diagnostics, each fidelity given each run's own forward and backward time)\n";
  std::snprintf(line, sizeof line, "  %-14s %-14s %6s", "algo", "family", "target");
  out << line;
  for (const auto& f : prediction_kinds(c)) {
    std::snprintf(line, sizeof line, " %16s", (short_name(f) + " MAPE").c_str());
    out << line;
  }
  for (const auto& n : c.networks) {
    for (const auto& f : prediction_kinds(c)) {
      std::snprintf(line, sizeof line, " %16s", (n.substr(0, 11) + " " + abbreviation(f)).c_str());
      out << line;
    }
  }
  out << "\n";
  for (const auto& algorithm : c.algorithms) {  // in the order asked for
    const auto& m = mape.at(algorithm);
    std::snprintf(line, sizeof line, "  %-14s %-14s %5.0f%%", algorithm.c_str(), m["family"].get<std::string>().c_str(),
                  100 * m["target"].get<double>());
    out << line;
    for (const auto& f : prediction_kinds(c)) {
      std::snprintf(line, sizeof line, " %16s", mape_text(m[f]).c_str());
      out << line;
    }
    for (const auto& n : c.networks) {
      for (const auto& f : prediction_kinds(c)) {
        std::snprintf(line, sizeof line, " %16s", mape_text(m["by_network"][n][f]).c_str());
        out << line;
      }
    }
    out << "\n";
  }
  return out.str();
}

nlohmann::json settings_json(const ValidationSettings& c) {
  nlohmann::json json = {
      {"algorithms", c.algorithms},        {"workers", c.workers},         {"networks", c.networks},
      {"stragglers", c.stragglers},        {"fidelities", c.fidelities},   {"clusters", c.clusters},
      {"iterations", c.iterations},        {"warmup", c.warmup},           {"servers", c.servers},
      {"batch_size", c.config.batch_size}, {"model_flags", c.model_flags}, {"train_flags", c.train_only_flags}};
  if (c.repeats > 1) json["repeats"] = c.repeats;  // absent for one run each, as before --repeats
  if (c.holdout) {
    json["holdout_fidelity"] = c.holdout_fidelity;
    if (c.noise > 0) json["noise"] = c.noise;
  }
  return json;
}

// The emulated networks that cannot be made here, each skipped with one line (and listed in `skipped`).
std::set<std::string> unavailable_networks(const ValidationSettings& c, nlohmann::json& skipped) {
  std::set<std::string> unavailable;
  for (const auto& n : c.networks) {
    if (n == "loopback") continue;
    const std::string missing = emulated_cluster_missing(c.out, n);
    if (missing.empty()) continue;
    log::info("validate: skipping --net " + n + ": " + missing);
    skipped.push_back({{"network", n}, {"reason", missing}});
    unavailable.insert(n);
  }
  return unavailable;
}

// One profile per compute-thread count the runs use, of the same model, data and batch size: DIR/profile-tT.json.
std::map<int64_t, std::string> profile_per_thread_count(const ValidationSettings& c,
                                                        const std::vector<Configuration>& configurations,
                                                        const std::set<std::string>& unavailable) {
  std::map<int64_t, std::string> profiles;
  for (const auto& k : configurations) {
    if (unavailable.count(k.network) > 0 || profiles.count(k.threads) > 0) continue;
    const std::string base = c.out + "/profile-t" + std::to_string(k.threads);
    std::vector<std::string> args = {"profile"};
    const auto model = c.model_flags;
    args.insert(args.end(), model.begin(), model.end());
    args.insert(args.end(), {"--batch-size", std::to_string(c.config.batch_size), "--threads",
                             std::to_string(k.threads), "--repeats", std::to_string(c.profile_repeats)});
    // What the runs' ranks get of this host's cores when they compute together: twice as many ranks as cores, as
    // the grids' 4 workers and a server on 2 (the simulator's --shared-cores; bench/README, session 39).
    args.insert(args.end(), {"--ranks-at-once", std::to_string(2 * host_cores())});
    const ResumableStep step(base + ".step.json", c.out + "/logs/profile-t" + std::to_string(k.threads) + ".log");
    const bool done = fs::exists(base + ".json");
    if (!(done && step.same_command(args))) log::info("validate: profiling: " + command_text(args));
    step.run_in_process(args, done, "profiling the model",
                        [&] { profile_in_process(args, base + ".json", step.log_path()); });
    profiles[k.threads] = base + ".json";
  }
  return profiles;
}

// The simulator's cluster for each configuration's network: given with --cluster or a preset, and for loopback a fit
// per worker count, made on first use. Without a fit the runs are still measured; their predictions say why not.
class SimulatorClusters {
 public:
  SimulatorClusters(const ValidationSettings& c, const Plan& plan) : c_(c), plan_(plan) {}

  // "" when there is none (`problem` says why).
  std::string of(const Configuration& k, std::string& problem) {
    if (plan_.cluster_of_network.count(k.network) > 0) {
      return with_host_figures(plan_.cluster_of_network.at(k.network), k);
    }
    const std::string loopback = loopback_of(k.workers, problem);
    return loopback.empty() ? loopback : with_host_figures(loopback, k);
  }

 private:
  std::string loopback_of(int64_t workers, std::string& problem) {
    if (loopback_.count(workers) == 0) {
      try {
        loopback_[workers] = loopback_cluster(c_.out, workers);
      } catch (const Interrupted&) {
        throw;
      } catch (const Error& e) {
        log::info(std::string("validate: no loopback cluster: ") + e.what());
        loopback_[workers] = "";
        problems_[workers] = e.what();
      }
    }
    problem = problems_[workers];
    return loopback_.at(workers);
  }

  // Every rank of the grid shares this host's cores, so each cluster takes what commbench measured of them: an
  // emulated network's (whose hosts are network namespaces of this one; a preset knows nothing of them) the busy
  // receivers' delay for as many processes, and every network's the hand-over per collective step at each worker
  // count of the grid (collective_handover: from the loopback allreduce fits). The cluster as given where it has
  // its own, or where nothing was measured.
  std::string with_host_figures(const std::string& cluster, const Configuration& k) {
    const auto key = std::make_pair(k.network, k.workers);
    if (with_host_.count(key) == 0) with_host_[key] = cluster_with_host_figures(cluster, k);
    return with_host_.at(key);
  }
  // Made once per network and worker count (every algorithm of the grid asks for it).
  std::string cluster_with_host_figures(const std::string& cluster, const Configuration& k) {
    auto description = sim::load_cluster(cluster);
    bool added = false;
    std::string problem;
    const std::string loopback = loopback_of(k.workers, problem);
    if (description.busy_delivery.empty() && !loopback.empty()) {
      const auto measured = sim::load_cluster(loopback);
      description.busy_delivery = measured.busy_delivery;
      description.busy_delivery_cores = measured.busy_delivery_cores;
      added = !measured.busy_delivery.empty();
    }
    if (description.collective_handover.empty() && !handover().empty()) {
      description.collective_handover = handover();
      added = true;
    }
    if (!added) return cluster;
    std::string name = k.network == "loopback" ? "loopback-host" : k.network;
    for (char& ch : name) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-') ch = '_';
    }
    const std::string path = c_.out + "/clusters/" + name + "-w" + std::to_string(k.workers) + ".json";
    write_json_atomically(path, sim::to_json(description));
    return path;
  }
  // From the loopback fits of every worker count of the grid, measured on first use; empty with fewer than two.
  const std::vector<sim::ClusterDescription::HandoverPoint>& handover() {
    if (!handover_measured_) {
      handover_measured_ = true;
      std::vector<sim::AllreduceFit> fits;
      for (const int64_t w : c_.workers) {
        std::string problem;
        const std::string loopback = loopback_of(w, problem);
        if (!loopback.empty()) fits.push_back(sim::load_cluster(loopback).allreduce_fit);
      }
      handover_ = sim::collective_handover_from_fits(fits);
      if (!handover_.empty()) {
        std::string line = "validate: a collective step on this host's shared cores costs, beyond " +
                           std::to_string(handover_.front().ranks) + " ranks',";
        for (size_t i = 1; i < handover_.size(); ++i) {
          char figure[64];
          std::snprintf(figure, sizeof figure, "%s +%.0f us at %lld", i > 1 ? "," : "", handover_[i].seconds * 1e6,
                        static_cast<long long>(handover_[i].ranks));
          line += figure;
        }
        log::info(line + " (collective_handover, from commbench's allreduce fits)");
      }
    }
    return handover_;
  }

  const ValidationSettings& c_;
  const Plan& plan_;
  std::map<int64_t, std::string> loopback_, problems_;                // by worker count
  std::map<std::pair<std::string, int64_t>, std::string> with_host_;  // by network and worker count
  bool handover_measured_ = false;
  std::vector<sim::ClusterDescription::HandoverPoint> handover_;
};

}  // namespace

int run_validation(const ValidationSettings& c) {
  const Plan plan = check_flags(c);
  fs::create_directories(c.out);
  const auto configurations = grid(c, plan);

  nlohmann::json skipped = nlohmann::json::array();
  const auto unavailable = unavailable_networks(c, skipped);
  const auto profiles = profile_per_thread_count(c, configurations, unavailable);
  if (!profiles.empty()) {
    char line[200];
    std::snprintf(line, sizeof line,
                  "validate: ranks computing together get %.2f of this host's %lld cores (%s: compute_capacity, the "
                  "simulator's --shared-cores)",
                  shared_cores_of(profiles.begin()->second), static_cast<long long>(host_cores()),
                  profiles.begin()->second.c_str());
    log::info(line);
  }

  // The runs, each with the compute threads its profile has (as train would choose them on one host; an emulated
  // host per rank would otherwise give each rank every core).
  const auto spec = validation_study(c, plan, unavailable);
  auto cells =
      unavailable.size() < c.networks.size() ? expand_study(spec, "validate's grid") : std::vector<StudyCell>{};
  std::set<std::string> finished_before;  // cells whose run an earlier validate finished: "cached"
  for (const auto& k : configurations) {
    if (unavailable.count(k.network) > 0) continue;
    for (int64_t r = 1; r <= c.repeats; ++r) {
      auto& cell = cell_of(cells, k, repeat_label(c, r));
      set_flag(cell.flags, {"--threads", {std::to_string(k.threads)}});
      const auto record = read_cell_record(c.out, cell);
      if (record && record->status == "done") finished_before.insert(cell.id);
    }
  }
  if (!cells.empty() && run_study_cells(c.out, spec, cells, /*retry_failed=*/true) == 130) {
    throw Interrupted("interrupted: stopped distsgd train (the finished runs are kept in " + c.out +
                      "/cells; run the same command again to resume)");
  }

  SimulatorClusters clusters(c, plan);
  nlohmann::json rows = nlohmann::json::array();
  int64_t failures = 0, index = 0;
  const int64_t total = static_cast<int64_t>(configurations.size());
  for (const auto& k : configurations) {
    ++index;
    if (unavailable.count(k.network) > 0) continue;
    std::string cluster_problem;
    const std::string cluster = clusters.of(k, cluster_problem);
    nlohmann::json row = {{"configuration", k.name()},
                          {"algorithm", k.recipe.name()},
                          {"family", k.recipe.family()},
                          {"workers", k.workers},
                          {"servers", k.servers},
                          {"network", k.network},
                          {"straggler", k.straggler.text},
                          {"threads", k.threads},
                          {"algorithm_flags", train_flags_of(k.recipe, c.servers)},
                          {"cluster", cluster},
                          {"profile", profiles.at(k.threads)}};
    const std::string counter = "[" + std::to_string(index) + "/" + std::to_string(total) + "] " + k.description();
    try {
      row = measured_row(c, cells, k, finished_before, sim::load_model_profile(profiles.at(k.threads)), row);
    } catch (const Error& e) {
      ++failures;
      row["status"] = "failed";
      row["error"] = e.what();
      log::info(counter + ": " + e.what());
      rows.push_back(row);
      continue;
    }
    const double measured = row["measured_samples_per_second"].get<double>();
    const std::string run_dir = row["run_dir"].get<std::string>();
    std::string report = counter + ": " + row["status"].get<std::string>() + " (" +
                         std::to_string(static_cast<int>(std::lround(row["cell_seconds"].get<double>()))) +
                         " s), measured " + std::to_string(std::lround(measured)) + " samples/s";
    for (const auto& kind : prediction_kinds(c)) {
      auto p = cluster.empty() ? nlohmann::json{{"not_predicted", "no cluster: " + cluster_problem}}
                               : predict(c, k, kind, profiles.at(k.threads), cluster, run_dir, row);
      if (p.contains("samples_per_second")) {
        p["error"] = (p["samples_per_second"].get<double>() - measured) / measured;
        report += ", " + kind + " " + std::to_string(std::lround(p["samples_per_second"].get<double>())) + " (" +
                  percent(p["error"].get<double>()) + ")";
      } else {
        report += ", " + kind + ": not predicted";
      }
      row["predictions"][kind] = p;
    }
    log::info(report);
    rows.push_back(row);
  }

  const auto mape = mape_by_algorithm(c, plan, rows);
  std::string text = tables(c, rows, mape);
  nlohmann::json holdout;
  std::string holdout_error;  // the measured rows are written whatever becomes of the held-out scoring
  if (c.holdout) {
    try {
      std::string holdout_text;
      // A row with a straggler (and with --holdout-fidelity des every held-out row): the discrete-event simulator on
      // the calibrated cluster (the analytical models have no slowed worker).
      HoldoutOptions options;
      options.predict_des = [&](const nlohmann::json& row, const std::string& cluster_path) {
        const auto at = std::find_if(configurations.begin(), configurations.end(),
                                     [&](const Configuration& k) { return k.name() == row["configuration"]; });
        require(at != configurations.end(), "validate --holdout: no configuration " + row["configuration"].dump());
        const auto p = predict(c, *at, "des", row["profile"].get<std::string>(), cluster_path,
                               row["run_dir"].get<std::string>(), row, "holdout");
        require(p.contains("samples_per_second"), "validate --holdout: " + row["configuration"].get<std::string>() +
                                                      ": " + p.value("not_predicted", std::string("not predicted")));
        return p;
      };
      // --holdout-fidelity des: the simulator that predicts the rows is the one fitted to the calibration rows.
      options.des_for_every_row = options.calibrate_with_des = c.holdout_fidelity == "des";
      options.progress = &std::cerr;
      options.shared_cores = shared_cores_of(profiles.begin()->second);
      options.noise = c.noise;
      holdout = holdout_report(rows, c.out, holdout_text, options);
      text += holdout_text;
    } catch (const Error& e) {
      holdout_error = e.what();
      holdout = {{"error", holdout_error}};
    }
  }
  nlohmann::json profiles_json = nlohmann::json::object();
  for (const auto& [threads, path] : profiles) profiles_json[std::to_string(threads)] = path;
  write_json_atomically(
      c.out + "/validation.json",
      {{"settings", settings_json(c)},
       {"measured",
        "samples/s once warm: each worker's iterations from --warmup on, timed from one forward pass to the next in "
        "trace.json, summed over workers (summary.json's samples_per_second, over the whole run, is beside it as "
        "summary_samples_per_second); with --repeats, the median of the repeats' (each in measured_repeats), the "
        "row's other figures from the run of the median"},
       {"error", "(predicted - measured) / measured; MAPE: the mean of |error| over an algorithm's predicted rows"},
       {"profiles", profiles_json},
       {"skipped_networks", skipped},
       {"rows", rows},
       {"mape", mape},
       {"holdout", holdout}});
  std::ofstream(c.out + "/validation.txt") << text;
  std::cout << text << "wrote " << c.out << "/validation.json" << std::endl;
  require(holdout_error.empty(),
          "--holdout: " + holdout_error + " (the measured rows are in " + c.out + "/validation.json)");
  require(failures == 0, std::to_string(failures) + " of " + std::to_string(rows.size()) +
                             " configurations failed (their error is in " + c.out + "/validation.json)");
  return 0;
}

}  // namespace distsgd::experiment
