#include "distsgd/experiment/study_prediction.hpp"

#include "distsgd/algo/algorithm.hpp"
#include "distsgd/cluster/link_spec.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/host_cores.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/experiment/forwarded_flags.hpp"
#include "distsgd/experiment/profile_in_process.hpp"
#include "distsgd/experiment/run_directory.hpp"
#include "distsgd/experiment/self_command.hpp"
#include "distsgd/experiment/simulate_in_process.hpp"
#include "distsgd/sim/algorithm_predictions.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "distsgd/sim/simulator_settings.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <thread>

namespace distsgd::experiment {
namespace {

// TCP/IP goodput over an emulated link, as a fraction of its rate: distsgd commbench measured 0.118 GB/s at 1 Gbit/s
// (0.944) and 0.0119 GB/s at 100 Mbit/s (0.952) (the simulator's emulated-1gbit and emulated-100mbit presets,
// bench/README.md).
constexpr double kGoodput = 0.95;
// Per-message latency of those presets (fitted by commbench over the emulated links).
constexpr double kEmulatedAlphaSeconds = 100e-6;

// Whether a flag's value leaves the time of an iteration as it is (where momentum lives, how a mixing weight or a
// clipping threshold is chosen, an extension's step scale): the algorithm's simulator model names such flags
// (sim::AlgorithmModel), and a prediction holds whatever their values.
bool timing_neutral(const std::string& algorithm, const std::string& flag) {
  const auto* model = sim::find_algorithm_model(algorithm);
  return model != nullptr && std::find(model->timing_neutral_flags.begin(), model->timing_neutral_flags.end(), flag) !=
                                 model->timing_neutral_flags.end();
}

// FNV-1a (64 bits) of the words: a stable file name for a command's output.
std::string digest(const std::vector<std::string>& words) {
  uint64_t hash = 14695981039346656037ull;
  for (const auto& word : words) {
    for (const char c : word + '\0') {
      hash ^= static_cast<unsigned char>(c);
      hash *= 1099511628211ull;
    }
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

std::string text_of_json(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

int64_t threads_of(const TrainConfig& c) {
  if (c.threads > 0) return c.threads;
  // As `distsgd train` gives each process (optim/threads.hpp): max(1, cores / processes on the host).
  const int64_t cores = host_cores();
  return std::max<int64_t>(1, cores / std::max<int64_t>(1, c.processes()));
}

// The words of `distsgd profile` of the cell's model and data at its batch size and thread count (the seed does not
// matter).
std::vector<std::string> profile_args(const StudyCell& cell, const SimulationSpec& spec) {
  std::vector<std::string> args{"profile"};
  for (const auto& flag : cell.flags) {
    if (flag.flag == "--seed") continue;
    if (std::find(kModelAndDataFlags.begin(), kModelAndDataFlags.end(), flag.flag) == kModelAndDataFlags.end()) {
      continue;
    }
    args.push_back(flag.flag);
    args.insert(args.end(), flag.values.begin(), flag.values.end());
  }
  for (const auto& word :
       {std::string("--batch-size"), std::to_string(cell.config.batch_size), std::string("--threads"),
        std::to_string(threads_of(cell.config)), std::string("--repeats"), std::to_string(spec.profile_repeats)}) {
    args.push_back(word);
  }
  return args;
}

// The algorithm's settings as `distsgd simulate` takes them; empty with `note` set when the simulator does not
// model one the cell gives.
std::vector<std::string> simulate_settings(const TrainConfig& c, std::string& note) {
  std::vector<std::string> args{"--algo", c.algorithm};
  const auto& info = algo::find_algorithm(c.algorithm);
  if (info.needs_servers) args.insert(args.end(), {"--servers", std::to_string(c.servers)});
  for (const OptionSpec* option : info.options) {
    if (sim::simulator_takes_flag(option->flag)) {
      args.insert(args.end(), {option->flag, text_of_json(option->value(c))});
    } else if (!option->is_default(c) && !timing_neutral(c.algorithm, option->flag)) {
      note = "the simulator does not model " + option->flag + " " + text_of_json(option->value(c));
      return {};
    }
  }
  for (const auto& [rank, factor] : c.slowdowns) {
    args.insert(args.end(), {"--slowdown", std::to_string(rank) + ":" + text_of_json(factor)});
  }
  return args;
}

struct Group {
  std::vector<std::string> args;  // simulate's, but the worker counts and the output
  std::vector<const StudyCell*> cells;
};

void read_predictions(const std::string& path, const std::vector<const StudyCell*>& cells, const std::string& cluster,
                      std::map<std::string, CellPrediction>& out) {
  const auto json = read_json_file_if_valid(path);
  const auto rows = json ? json->value("predictions", nlohmann::json::array()) : nlohmann::json::array();
  for (const StudyCell* cell : cells) {
    CellPrediction& p = out[cell->id];
    p.cluster = cluster;
    const auto row = std::find_if(rows.begin(), rows.end(), [&](const nlohmann::json& r) {
      return r.is_object() && r.value("workers", int64_t{-1}) == cell->config.workers;
    });
    if (row == rows.end()) {
      p.note = path + " holds no prediction for " + std::to_string(cell->config.workers) + " workers";
      continue;
    }
    p.available = true;
    p.samples_per_second = row->value("samples_per_second", 0.0);
    p.iteration_seconds = row->value("iteration_seconds", 0.0);
    p.scaling_efficiency = row->value("scaling_efficiency", 0.0);
    p.exposed_communication_seconds = row->value("exposed_communication_seconds", 0.0);
    const auto range = row->find("samples_per_second_range");
    if (range != row->end() && range->is_array() && range->size() == 2) {
      p.samples_per_second_low = (*range)[0].get<double>();
      p.samples_per_second_high = (*range)[1].get<double>();
    }
    p.fidelity = json->value("fidelity", "");
  }
}

}  // namespace

std::string cluster_for_network(const TrainConfig& c, const SimulationSpec& spec, const std::string& study_dir,
                                std::string& note) {
  if (const auto given = spec.clusters.find(c.net); given != spec.clusters.end()) return given->second;
  if (c.net.empty()) {
    note = "no cluster description for loopback runs (give one in the spec's simulate.clusters[\"\"])";
    return "";
  }
  if (!c.links.empty() || c.hosts > 0) {
    note = "--link and --hosts are not modelled (give a cluster in the spec's simulate.clusters)";
    return "";
  }
  const auto link = cluster::parse_link("--net", c.net);
  if (link.rate_bits_per_second <= 0) {
    note = "an unshaped network has no rate to model";
    return "";
  }
  const auto presets = sim::cluster_preset_names();
  const auto measured = [&](const std::string& name, double rate) {
    return link.rate_bits_per_second == rate && !link.impairment.any() &&
           std::find(presets.begin(), presets.end(), name) != presets.end();
  };
  if (measured("emulated-1gbit", 1e9)) return "emulated-1gbit";
  if (measured("emulated-100mbit", 100e6)) return "emulated-100mbit";
  // Another rate or a delay: the rate's goodput, and the presets' latency plus the one-way delay (the delay line
  // holds a packet once, at the receiving host: README, "On an emulated cluster").
  const std::string path = study_dir + "/simulation/cluster-" + path_safe(c.net) + ".json";
  std::filesystem::create_directories(study_dir + "/simulation");
  const double bytes_per_second = link.rate_bytes_per_second() * kGoodput;
  write_json_atomically(path, {{"name", "emulated-" + c.net},
                               {"source", "derived by distsgd study from --net " + c.net +
                                              ": 0.95 of the rate (the goodput commbench measured at 100 Mbit/s and "
                                              "1 Gbit/s), alpha 100 us + the link delay"},
                               {"worker_bytes_per_second", bytes_per_second},
                               {"server_bytes_per_second", bytes_per_second},
                               {"alpha_seconds", kEmulatedAlphaSeconds + link.impairment.delay_seconds},
                               {"gamma_seconds_per_byte", 0.0}});
  return path;
}

std::map<std::string, CellPrediction> predict_cells(const std::vector<StudyCell>& cells, const SimulationSpec& spec,
                                                    const std::string& study_dir) {
  std::map<std::string, CellPrediction> predictions;
  if (!spec.enabled) {
    for (const auto& cell : cells) predictions[cell.id].note = "simulation turned off in the spec";
    return predictions;
  }
  const std::string dir = study_dir + "/simulation";
  std::filesystem::create_directories(dir + "/logs");
  std::map<std::string, std::string> profiles;  // profile args -> file, or the error that stopped it ("!" first)
  std::map<std::vector<std::string>, Group> groups;
  for (const auto& cell : cells) {
    CellPrediction& p = predictions[cell.id];
    const std::string cluster = cluster_for_network(cell.config, spec, study_dir, p.note);
    if (cluster.empty()) continue;
    p.cluster = cluster;
    auto settings = simulate_settings(cell.config, p.note);
    if (settings.empty()) continue;
    std::string profile = spec.profile;
    if (profile == "auto") {
      const auto args = profile_args(cell, spec);
      const std::string key = join(args, " ");
      if (!profiles.count(key)) {
        const std::string out = dir + "/profile-" + digest(args) + ".json";
        try {
          // The file's name digests the words, so a changed model, batch or thread count is profiled anew.
          if (!std::filesystem::exists(out)) {
            profile_in_process(args, out, dir + "/logs/profile-" + digest(args) + ".log");
          }
          profiles[key] = out;
        } catch (const Interrupted&) {
          throw;
        } catch (const Error& e) {
          profiles[key] = std::string("!") + e.what();
        }
      }
      profile = profiles[key];
      if (profile.rfind('!', 0) == 0) {
        p.note = profile.substr(1);
        continue;
      }
    }
    std::vector<std::string> args{"simulate", "--profile", profile, "--cluster", cluster};
    args.insert(args.end(), settings.begin(), settings.end());
    args.insert(args.end(), spec.args.begin(), spec.args.end());
    auto& group = groups[args];
    group.args = args;
    group.cells.push_back(&cell);
  }
  for (const auto& [key, group] : groups) {
    std::vector<std::string> workers;
    for (const StudyCell* cell : group.cells) workers.push_back(std::to_string(cell->config.workers));
    std::sort(workers.begin(), workers.end(),
              [](const auto& a, const auto& b) { return std::stoll(a) < std::stoll(b); });
    workers.erase(std::unique(workers.begin(), workers.end()), workers.end());
    std::vector<std::string> args = group.args;
    args.insert(args.end(), {"--workers", join(workers, ",")});
    const std::string cluster = group.args[4];
    // The analytical fidelity first; what it does not model (a straggler, compression) the discrete-event one may.
    std::vector<std::vector<std::string>> attempts{args};
    if (std::find(args.begin(), args.end(), "--fidelity") == args.end()) {
      attempts.push_back(args);
      attempts.back().insert(attempts.back().end(), {"--fidelity", "des"});
    }
    for (size_t a = 0; a < attempts.size(); ++a) {
      const std::string out = dir + "/predict-" + digest(attempts[a]) + ".json";
      try {
        if (!std::filesystem::exists(out)) {
          // The file's name digests the words, so changed settings predict anew.
          simulate_in_process(attempts[a], out, dir + "/logs/predict-" + digest(attempts[a]) + ".log");
        }
        read_predictions(out, group.cells, cluster, predictions);
        break;
      } catch (const Interrupted&) {
        throw;
      } catch (const Error& e) {
        for (const StudyCell* cell : group.cells) predictions[cell->id].note = e.what();
      }
    }
  }
  return predictions;
}

}  // namespace distsgd::experiment
