#include "distsgd/experiment/advice.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/experiment/algorithm_recipes.hpp"
#include "distsgd/experiment/forwarded_flags.hpp"
#include "distsgd/experiment/run_directory.hpp"
#include "distsgd/experiment/self_command.hpp"
#include "distsgd/experiment/simulate_in_process.hpp"
#include "distsgd/experiment/study_cell_record.hpp"
#include "distsgd/experiment/study_grid.hpp"
#include "distsgd/experiment/study_runner.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "distsgd/sim/platform/model_profile.hpp"
#include "distsgd/train/options.hpp"

namespace distsgd::experiment {

SamplesToTarget samples_to_target(const std::vector<nlohmann::json>& evaluations, double target,
                                  const std::string& measure) {
  return samples_to_target(evaluations, ProgressTarget{"test_accuracy", target}, measure);
}

SamplesToTarget samples_to_target(const std::vector<nlohmann::json>& evaluations, const ProgressTarget& target,
                                  const std::string& measure) {
  // Progress is the metric, negated for a loss: higher is closer either way, and the interpolation is the same.
  const double sign = target.lower_is_better() ? -1.0 : 1.0, goal = sign * target.value;
  SamplesToTarget result;
  double previous_samples = 0, previous_progress = 0;
  bool first = true;
  for (const auto& e : evaluations) {
    const double progress = sign * e.value(target.metric, target.lower_is_better() ? HUGE_VAL : 0.0);
    const double samples = e.value(measure, 0.0);
    result.best_accuracy = std::max(result.best_accuracy, e.value("test_accuracy", 0.0));
    if (e.contains("test_loss") && e["test_loss"].is_number()) {
      const double loss = e["test_loss"].get<double>();
      result.best_loss = result.best_loss == 0 ? loss : std::min(result.best_loss, loss);
    }
    result.samples_evaluated = samples;
    if (!result.samples && progress >= goal) {
      if (first) {
        result.samples = samples;
        result.upper_bound = true;
      } else {
        result.samples = previous_samples +
                         (goal - previous_progress) / (progress - previous_progress) * (samples - previous_samples);
      }
    }
    previous_samples = samples;
    previous_progress = progress;
    first = false;
  }
  return result;
}

std::string ProgressTarget::text() const {
  std::ostringstream out;
  out << (lower_is_better() ? "target loss " : "target accuracy ") << value;
  return out.str();
}

ProgressTarget target_of(const AdviceSettings& c) {
  if (c.target_loss > 0) return {"test_loss", c.target_loss};
  return {"test_accuracy", c.target_accuracy};
}

namespace {

namespace fs = std::filesystem;

// The assumptions behind the ranking, written into advice.json (the README says more).
const char* kAssumptions =
    "time to target = samples to reach the target (accuracy or loss), measured in short runs at small scale on this "
    "host, / "
    "throughput predicted at the requested workers on the cluster. Assumes the samples needed carry over from the "
    "small runs to N workers (they do not where asynchronous staleness grows with N, or where the global batch of "
    "synchronous algorithms grows past what the learning rate suits), that the profile's device is the cluster's, "
    "and that the recipes (bench/README.md) suit the model.";
const char* kVirtualAssumptions =
    "time to target = virtual seconds for a virtual cluster of the requested workers on the cluster (distsgd train "
    "--virtual: the algorithms' own arithmetic in the cluster's order of events, compute timed by the profile) to "
    "reach the target (accuracy or loss), interpolated between evaluations. Assumes the profile's device is the "
    "cluster's, the "
    "simulator's network model holds for it (README, \"Accuracy at scale\"), and that the recipes suit the model.";

struct Candidate {
  AlgorithmRecipe recipe;
  double samples_per_second = 0;
  // On each cluster that fits a calibrated cluster's points as well (calibrate --noise), in the file's order.
  std::vector<double> consistent_samples_per_second;
  std::string prediction_file;
  std::string run_dir;
  std::optional<SamplesToTarget> convergence;   // none: no finished run
  std::optional<SamplesToTarget> virtual_time;  // --virtual: the run's virtual seconds to the target
  // --virtual on a calibrated cluster: the run's speed on each cluster that fits the calibration as well, relative to
  // the best fit (summary.json virtual_range.relative_speeds, in the file's order).
  std::vector<double> virtual_relative_speeds;
  std::string note;
  double time_to_target() const {
    return virtual_time ? *virtual_time->samples : *convergence->samples / samples_per_second;
  }
  bool reached() const {
    if (virtual_time) return virtual_time->samples.has_value();
    return convergence && convergence->samples.has_value() && samples_per_second > 0;
  }
};

// The runs advise reads are a study's cells (experiment/study_runner.hpp runs them: one progress line, Ctrl-C and
// resumption, results.csv for `distsgd report`): DIR/convergence (DIR/virtual with --virtual), one cell per
// algorithm, labelled as its run ("arsgd-w4", "bsp-s1-w4": DIR/convergence/cells/algorithm=arsgd-w4).
std::string runs_dir(const AdviceSettings& c) { return c.dir + (c.virtual_cluster ? "/virtual" : "/convergence"); }

std::string run_label(const AdviceSettings& c, const AlgorithmRecipe& recipe) {
  return recipe.name() + (recipe.uses_servers() ? "-s" + std::to_string(c.servers) : "") + "-w" +
         std::to_string(c.virtual_cluster ? c.workers : c.convergence_workers);
}

StudySpec convergence_study(const AdviceSettings& c, const sim::ModelProfile& profile,
                            const std::vector<AlgorithmRecipe>& recipes) {
  auto base = c.model_flags;
  if (std::find(base.begin(), base.end(), "--model") == base.end())
    base.insert(base.begin(), {"--model", profile.model});
  const auto train_only = c.train_only_flags;
  base.insert(base.end(), train_only.begin(), train_only.end());
  base.insert(base.end(), {"--workers", std::to_string(c.virtual_cluster ? c.workers : c.convergence_workers),
                           "--batch-size", std::to_string(profile.batch_size), "--epochs",
                           std::to_string(c.convergence_epochs), "--no-checkpoint", "--progress-seconds", "1000000"});
  if (c.virtual_cluster) {
    base.insert(base.end(), {"--virtual", "--profile", c.profile, "--cluster", c.cluster, "--evals-per-epoch",
                             std::to_string(c.evals_per_epoch)});
  }
  GridSpec grid;
  grid.base = flag_list_of(base);
  Axis algorithm{"algorithm", {}};
  for (const auto& recipe : recipes) {
    algorithm.values.push_back({run_label(c, recipe), flag_list_of(train_flags_of(recipe, c.servers))});
  }
  grid.axes = {algorithm};
  StudySpec spec;
  spec.name = c.virtual_cluster ? "advise-virtual" : "advise-convergence";
  spec.description = c.virtual_cluster ? "distsgd advise --virtual's runs at the target worker count"
                                       : "distsgd advise's convergence runs";
  spec.simulation.enabled = false;
  spec.grids = {grid};
  spec.command = "advise";
  return spec;
}

double predicted_throughput(const AdviceSettings& c, const AlgorithmRecipe& recipe, std::string& file,
                            std::vector<double>& consistent) {
  std::vector<std::string> args = {"simulate", "--profile", c.profile, "--cluster", c.cluster};
  const auto algorithm = simulate_flags_of(recipe, c.servers);
  args.insert(args.end(), algorithm.begin(), algorithm.end());
  args.insert(args.end(), {"--workers", std::to_string(c.workers)});
  args.insert(args.end(), {"--fidelity", c.fidelity});
  file = c.dir + "/predictions/" + recipe.name() + ".json";
  args.insert(args.end(), {"--out", file});
  const std::string log = c.dir + "/predictions/" + recipe.name() + ".log";
  try {
    simulate_in_process(args, file, log);
  } catch (const Error& e) {
    throw Error("simulating " + recipe.name() + " failed: " + e.what());
  }
  const auto json = read_json_file_if_valid(file);
  require(json && json->contains("predictions") && !(*json)["predictions"].empty(),
          file + ": predictions[0].samples_per_second: missing");
  const auto& prediction = (*json)["predictions"][0];
  if (prediction.contains("samples_per_second_consistent")) {
    consistent = prediction["samples_per_second_consistent"].get<std::vector<double>>();
  }
  return prediction.at("samples_per_second").get<double>();
}

// The convergence run of one algorithm (its cell, run by then if asked): read if it finished and matches the
// profile's model and batch size.
void find_convergence(const AdviceSettings& c, const sim::ModelProfile& profile, const StudyCell& cell, Candidate& k) {
  k.run_dir = cell_directory(runs_dir(c), cell);
  const auto record = read_cell_record(runs_dir(c), cell);
  if (record && record->status == "failed") {  // a run that diverged or failed: the others still rank
    k.note = "the convergence run of " + k.recipe.name() + " failed: " + record->reason;
    return;
  }
  const auto summary = finished_summary(k.run_dir);
  if (!summary) return;
  if (summary->value("model", std::string()) != profile.model) {
    k.note = "convergence run ignored: it trained " + summary->value("model", std::string("?")) +
             ", the profile is of " + profile.model;
    return;
  }
  if ((*summary)["batch_size"].get<int64_t>() != profile.batch_size) {
    k.note = "convergence run ignored: batch " + (*summary)["batch_size"].dump() + " per worker, the profile's is " +
             std::to_string(profile.batch_size);
    return;
  }
  const auto evaluations = evaluation_records(k.run_dir);
  k.convergence = samples_to_target(evaluations, target_of(c));
  if (c.virtual_cluster) {
    k.virtual_time = samples_to_target(evaluations, target_of(c), "wall_seconds");
    const auto range = summary->value("virtual_range", nlohmann::json::object());
    for (const auto& speed : range.value("relative_speeds", nlohmann::json::array())) {
      k.virtual_relative_speeds.push_back(speed.get<double>());
    }
  }
}

std::string whole_number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", value);
  return text;
}

std::string duration(double seconds) {
  char text[32];
  if (seconds < 120) {
    std::snprintf(text, sizeof text, "%.1f s", seconds);
  } else if (seconds < 7200) {
    std::snprintf(text, sizeof text, "%.1f min", seconds / 60);
  } else {
    std::snprintf(text, sizeof text, "%.1f h", seconds / 3600);
  }
  return text;
}

}  // namespace

int run_advice(const AdviceSettings& c) {
  require(c.workers >= 1, "--workers: expected a worker count of at least 1, got " + std::to_string(c.workers));
  require(c.target_accuracy >= 0 && c.target_accuracy <= 1,
          "--target-accuracy: expected a fraction in [0, 1], got " + std::to_string(c.target_accuracy));
  require(c.convergence_workers >= 2, "--convergence-workers must be at least 2");
  require(c.convergence_epochs >= 1, "--convergence-epochs must be at least 1");
  require(c.servers >= 1, "--servers must be at least 1");
  require(c.fidelity == "analytical" || c.fidelity == "des",
          "--fidelity: expected analytical or des, got '" + c.fidelity + "'");
  require(c.target_loss >= 0, "--target-loss: expected a loss of 0 or more, got " + std::to_string(c.target_loss));
  require(c.target_loss == 0 || c.target_accuracy == 0,
          "--target-accuracy and --target-loss exclude each other: give the one target the ranking is by");
  const bool has_target = target_of(c).value > 0;
  require(!c.measure_convergence || has_target,
          "--measure-convergence needs --target-accuracy or --target-loss (the target whose samples it measures)");
  require(!c.virtual_cluster || has_target,
          "--virtual needs --target-accuracy or --target-loss (the target whose virtual time it ranks by)");
  require(c.evals_per_epoch >= 1, "--evals-per-epoch must be at least 1");
  const auto recipes = recipes_for(c.algorithms, "--algos");
  require(!recipes.empty(), "--algos: give at least one algorithm");
  const auto profile = sim::load_model_profile(c.profile);
  const auto cluster = sim::load_cluster(c.cluster);
  train::validate(c.config);
  fs::create_directories(c.dir + "/predictions");

  // The runs' cells (read when there is a target; trained first when asked).
  const auto spec = convergence_study(c, profile, recipes);
  const auto cells = has_target ? expand_study(spec, "advise's runs") : std::vector<StudyCell>{};
  if (has_target && (c.measure_convergence || c.virtual_cluster)) {
    fs::create_directories(runs_dir(c));
    if (run_study_cells(runs_dir(c), spec, cells, /*retry_failed=*/false) == 130) {
      throw Interrupted("interrupted: stopped distsgd train (the finished runs are kept in " + runs_dir(c) +
                        "; run the same command again to resume)");
    }
  }
  std::vector<Candidate> candidates;
  for (size_t i = 0; i < recipes.size(); ++i) {
    Candidate k;
    k.recipe = recipes[i];
    k.samples_per_second = predicted_throughput(c, recipes[i], k.prediction_file, k.consistent_samples_per_second);
    if (has_target) find_convergence(c, profile, cells.at(i), k);
    candidates.push_back(k);
  }

  // The ranking: by predicted time to the target where samples-to-target are known; the algorithms whose run did
  // not reach it, then those without a run, follow by throughput.
  const bool any_convergence =
      std::any_of(candidates.begin(), candidates.end(), [](const auto& k) { return k.convergence.has_value(); });
  std::string basis = "time_to_target";
  std::string reason;
  if (!has_target) {
    basis = "throughput";
    reason = "no --target-accuracy or --target-loss: ranked by predicted throughput alone";
  } else if (!any_convergence) {
    basis = "throughput";
    reason = "no convergence runs in " + runs_dir(c) +
             "/cells (run with --measure-convergence): ranked by predicted throughput alone";
  } else if (std::none_of(candidates.begin(), candidates.end(), [](const auto& k) { return k.reached(); })) {
    basis = "throughput";
    reason = "no convergence run reached the " + target_of(c).text() + ": ranked by predicted throughput alone";
  }
  auto group = [&](const Candidate& k) {
    if (basis == "throughput") return 0;
    if (k.reached()) return 0;
    return k.convergence ? 1 : 2;
  };
  std::stable_sort(candidates.begin(), candidates.end(), [&](const Candidate& a, const Candidate& b) {
    if (group(a) != group(b)) return group(a) < group(b);
    if (basis == "time_to_target" && group(a) == 0) return a.time_to_target() < b.time_to_target();
    return a.samples_per_second > b.samples_per_second;
  });

  // The same ranking on each cluster that fits the calibration's points within their noise: which algorithm comes
  // first there. A virtual run's time is its best fit's, scaled per cluster by its speed there relative to the best
  // fit (the DES's, train --virtual's virtual_range).
  std::map<std::string, int64_t> first_on_consistent;
  const auto per_cluster = [&](const Candidate& k) {
    return c.virtual_cluster ? k.virtual_relative_speeds.size() : k.consistent_samples_per_second.size();
  };
  const size_t consistent = per_cluster(candidates.front());
  const bool rerank = consistent > 0 && std::all_of(candidates.begin(), candidates.end(),
                                                    [&](const Candidate& k) { return per_cluster(k) == consistent; });
  for (size_t j = 0; rerank && j < consistent; ++j) {
    const Candidate* first = nullptr;
    double first_key = 0;
    for (const auto& k : candidates) {
      if (group(k) != group(candidates.front())) continue;
      // Smaller is better: time to the target, or the throughput negated.
      double key = 0;
      if (c.virtual_cluster) {
        const double speed = k.virtual_relative_speeds[j];
        key = basis == "time_to_target" && k.reached() ? k.time_to_target() / speed : -k.samples_per_second * speed;
      } else {
        const double rate = k.consistent_samples_per_second[j];
        key = basis == "time_to_target" && k.reached() ? *k.convergence->samples / rate : -rate;
      }
      if (!first || key < first_key) first = &k, first_key = key;
    }
    ++first_on_consistent[first->recipe.name()];
  }

  std::ostringstream table;
  table << "advice for " << profile.model << " (batch " << profile.batch_size << " per worker) on " << cluster.name
        << " at " << c.workers << " workers";
  if (has_target) table << ", " << target_of(c).text();
  table << "\n";
  if (!reason.empty()) table << reason << "\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %4s  %-14s  %12s  %22s  %14s  %s\n", "rank", "algo", "samples/s",
                ("samples to target (w" + std::to_string(c.virtual_cluster ? c.workers : c.convergence_workers) +
                 (c.virtual_cluster ? ", virtual)" : ")"))
                    .c_str(),
                "time to target", "note");
  table << line;
  nlohmann::json rows = nlohmann::json::array();
  int rank = 0;
  for (auto& k : candidates) {
    ++rank;
    nlohmann::json row = {{"rank", rank},
                          {"algorithm", k.recipe.name()},
                          {"family", k.recipe.family()},
                          {"predicted_samples_per_second", k.samples_per_second},
                          {"prediction_file", k.prediction_file},
                          {"samples_to_target", nullptr},
                          {"time_to_target_seconds", nullptr}};
    std::string samples = "-", time = "-";
    if (k.convergence) {
      row["convergence_run"] = k.run_dir;
      if (target_of(c).lower_is_better()) {
        row["best_loss"] = k.convergence->best_loss;
      } else {
        row["best_accuracy"] = k.convergence->best_accuracy;
      }
      row["samples_evaluated"] = k.convergence->samples_evaluated;
      if (k.reached()) {
        row["samples_to_target"] = *k.convergence->samples;
        row["samples_to_target_is_upper_bound"] = k.convergence->upper_bound;
        row["time_to_target_seconds"] = k.time_to_target();
        samples = (k.convergence->upper_bound ? "<= " : "") + whole_number(*k.convergence->samples);
        time = duration(k.time_to_target());
        if (k.convergence->upper_bound) k.note = "reached at the first evaluation";
      } else {
        char best[96];
        std::snprintf(best, sizeof best, "not reached in %.0f samples (best %.4f)", k.convergence->samples_evaluated,
                      target_of(c).lower_is_better() ? k.convergence->best_loss : k.convergence->best_accuracy);
        k.note = best;
      }
    } else if (has_target && k.note.empty()) {
      k.note = "no convergence run";
    }
    row["note"] = k.note;
    rows.push_back(row);
    std::snprintf(line, sizeof line, "  %4d  %-14s  %12.0f  %22s  %14s  %s\n", rank, k.recipe.name().c_str(),
                  k.samples_per_second, samples.c_str(), time.c_str(), k.note.c_str());
    table << line;
  }
  nlohmann::json firsts = nlohmann::json::object();
  if (rerank) {
    for (const auto& [name, count] : first_on_consistent) firsts[name] = count;
    const std::string top = candidates.front().recipe.name();
    const std::string clusters = std::to_string(consistent) +
                                 " clusters that fit the calibration's points within "
                                 "their noise (distsgd calibrate --noise)";
    if (first_on_consistent.size() == 1 && first_on_consistent.count(top)) {
      table << "  " << top << " is first on each of the " << clusters << "\n";
    } else {
      table << "  first on the " << clusters << ":";
      for (const auto& [name, count] : first_on_consistent) table << " " << name << " " << count;
      table << "; the points do not settle the first pick (measure the contenders at more workers)\n";
    }
  }
  write_json_atomically(c.dir + "/advice.json",
                        {{"profile", c.profile},
                         {"cluster", sim::to_json(cluster)},
                         {"workers", c.workers},
                         {"target_accuracy", c.target_accuracy},
                         {"target_loss", c.target_loss},
                         {"convergence_workers", c.convergence_workers},
                         {"fidelity", c.fidelity},
                         {"ranked_by", basis},
                         {"reason", reason},
                         {"virtual", c.virtual_cluster},
                         {"assumptions", c.virtual_cluster ? kVirtualAssumptions : kAssumptions},
                         {"ranking", rows},
                         {"first_on_consistent_clusters", firsts}});
  std::cout << table.str() << "wrote " << c.dir << "/advice.json" << std::endl;
  return 0;
}

}  // namespace distsgd::experiment
