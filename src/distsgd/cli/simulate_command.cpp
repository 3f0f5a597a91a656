#include "distsgd/cli/simulate_command.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <utility>

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/sim/asynchronous_model.hpp"
#include "distsgd/sim/cluster_description.hpp"
#include "distsgd/sim/decentralized_model.hpp"
#include "distsgd/sim/discrete_event_simulator.hpp"
#include "distsgd/sim/heterogeneity.hpp"
#include "distsgd/sim/model_profile.hpp"
#include "distsgd/sim/outer_model.hpp"
#include "distsgd/sim/powersgd_model.hpp"
#include "distsgd/sim/synchronous_model.hpp"

namespace distsgd::cli {
namespace {

constexpr double kMB = 1024.0 * 1024.0;  // as --bucket-mb of distsgd train (AllreduceWorker::buckets_from_flags)

using Predictor = std::function<sim::Prediction(const SimulateCommand&, const sim::ModelProfile&,
                                                const sim::ClusterDescription&, int64_t workers)>;

sim::PsLayout ps_layout(const SimulateCommand& c) { return {c.sharding, c.local_aggregation == "host"}; }

// Every algorithm the simulator predicts, by its name in `distsgd train --algo`.
const std::vector<std::pair<std::string, Predictor>>& predictors() {
  using C = const SimulateCommand&;
  using P = const sim::ModelProfile&;
  using L = const sim::ClusterDescription&;
  static const std::vector<std::pair<std::string, Predictor>> all = {
      {"arsgd",
       [](C c, P p, L l, int64_t w) {
         if (c.compress == "powersgd") return sim::predict_powersgd(p, w, c.rank, l);
         return sim::predict_allreduce_sgd(
             p, w, l, sim::allreduce_settings(c.overlap, c.bucket_mb * kMB, c.first_bucket_mb * kMB));
       }},
      {"bsp", [](C c, P p, L l, int64_t w) { return sim::predict_bsp(p, w, c.servers, l, ps_layout(c)); }},
      {"asp", [](C c, P p, L l, int64_t w) { return sim::predict_asp(p, w, c.servers, l, ps_layout(c)); }},
      {"ssp", [](C c, P p, L l, int64_t w) { return sim::predict_ssp(p, w, c.servers, c.staleness, l, ps_layout(c)); }},
      {"easgd", [](C c, P p, L l, int64_t w) { return sim::predict_easgd(p, w, c.servers, c.tau, l, ps_layout(c)); }},
      {"aladdin",
       [](C c, P p, L l, int64_t w) { return sim::predict_aladdin(p, w, c.servers, c.pi, l, ps_layout(c)); }},
      {"gosgd", [](C c, P p, L l, int64_t w) { return sim::predict_gosgd(p, w, c.gossip_probability, l); }},
      {"gossip", [](C, P p, L l, int64_t w) { return sim::predict_gossip(p, w, l); }},
      {"sgp", [](C c, P p, L l, int64_t w) { return sim::predict_sgp(p, w, c.sgp_overlap > 0, l); }},
      {"adpsgd", [](C, P p, L l, int64_t w) { return sim::predict_adpsgd(p, w, l); }},
      // Slow momentum and the outer optimizer cost an update over the fragment, as the plain average does.
      {"localsgd", [](C c, P p, L l, int64_t w) { return sim::predict_outer_loop(p, w, l, {c.sync_every}); }},
      {"slowmo",
       [](C c, P p, L l, int64_t w) {
         return sim::predict_outer_loop(p, w, l, {c.sync_every, 1, 0, 32, 0, c.slowmo_base == "sgp"});
       }},
      {"diloco",
       [](C c, P p, L l, int64_t w) {
         const int64_t rank = c.compress == "powersgd" ? c.rank : 0;
         return sim::predict_outer_loop(p, w, l, {c.sync_every, c.fragments, c.fragment_delay, c.outer_bits, rank});
       }},
  };
  return all;
}

std::vector<std::string> predictor_names() {
  std::vector<std::string> names;
  for (const auto& entry : predictors()) names.push_back(entry.first);
  return names;
}

// The algorithm's predictor; throws Error (`context` first) naming the algorithms the simulator predicts.
const Predictor& predictor_of(const std::string& algorithm, const std::string& context = "") {
  const auto predictor = std::find_if(predictors().begin(), predictors().end(),
                                      [&](const auto& entry) { return entry.first == algorithm; });
  require(predictor != predictors().end(),
          context + "the simulator predicts " + join(predictor_names()) + " so far (got '" + algorithm + "')");
  return predictor->second;
}

// " (overlap wfbp)", " (compress powersgd, rank 2)", " (base sgp)": what AR-SGD's (DiLoCo's, compressed; SlowMo's
// over SGP) line of the table runs; nothing for the others.
std::string arsgd_variant(const SimulateCommand& c) {
  if (c.compress == "powersgd") return " (compress powersgd, rank " + std::to_string(c.rank) + ")";
  if (c.slowmo_base == "sgp") return " (base sgp)";
  if (c.algorithm != "arsgd") return "";
  return " (overlap " + c.overlap + (c.compress == "dgc" ? ", compress dgc" : "") + ")";
}

// RANK:FACTOR values; over several worker counts, each applies where its worker exists (and must exist in the
// largest).
std::vector<std::pair<int64_t, double>> rank_factors(const std::string& flag, const std::vector<std::string>& texts,
                                                     int64_t workers, int64_t most_workers) {
  std::vector<std::pair<int64_t, double>> factors;
  for (const auto& text : texts) {
    const auto factor = sim::parse_rank_factor(flag, text);
    if (factor.first < workers || factor.first >= most_workers) factors.push_back(factor);  // checked later
  }
  return factors;
}

// The discrete-event simulator's settings for one worker count.
sim::DesSettings des_settings(const SimulateCommand& c, int64_t workers) {
  require(c.compress == "none" || c.compress == "dgc" || c.compress == "powersgd",
          "--compress must be none, dgc or powersgd (got '" + c.compress + "')");
  require(c.jitter == "lognormal" || c.jitter == "normal",
          "--jitter must be lognormal or normal (got '" + c.jitter + "')");
  require(c.seed >= 0, "--seed must not be negative");
  sim::DesSettings s;
  s.algorithm = c.algorithm;
  s.workers = workers;
  s.overlap = c.overlap;
  s.bucket_bytes = c.bucket_mb * kMB;
  s.first_bucket_bytes = c.first_bucket_mb * kMB;
  s.density = c.compress == "dgc" ? c.density : 0;
  require(c.compress != "dgc" || (c.density > 0 && c.density <= 1), "--density must be in (0, 1]");
  require(c.compress != "powersgd" || c.rank >= 1, "--rank must be at least 1 (got " + std::to_string(c.rank) + ")");
  s.powersgd_rank = c.compress == "powersgd" ? c.rank : 0;
  s.powersgd_start = c.powersgd_start;
  s.servers = c.servers;
  s.sharding = c.sharding;
  s.local_aggregation = c.local_aggregation;
  s.staleness = c.staleness;
  s.tau = c.tau;
  s.pi = c.pi;
  s.aladdin_variant = c.aladdin_variant;
  s.gossip_probability = c.gossip_probability;
  s.gossip_mode = c.gossip_mode;
  s.sgp_overlap = c.sgp_overlap;
  s.sync_every = c.sync_every;
  s.slowmo_base = c.slowmo_base;
  // Only diloco takes fragments, a delay and quantised payloads (as distsgd train).
  const bool diloco = c.algorithm == "diloco";
  s.fragments = diloco ? c.fragments : 1;
  s.fragment_delay = diloco ? c.fragment_delay : 0;
  s.outer_bits = diloco ? c.outer_bits : 32;
  s.iterations = c.iterations;
  s.warmup = c.warmup;
  s.seed = static_cast<uint64_t>(c.seed);
  s.prefetch = c.prefetch;
  s.collectives = c.collectives;
  auto& h = s.heterogeneity;
  const int64_t most = *std::max_element(c.workers.begin(), c.workers.end());
  h.slowdowns = rank_factors("--slowdown", c.slowdowns, workers, most);
  h.compute_factors = rank_factors("--compute-multiplier", c.compute_multipliers, workers, most);
  h.link_factors = rank_factors("--link-multiplier", c.link_multipliers, workers, most);
  h.jitter_cv = c.jitter_cv;
  h.jitter_kind = c.jitter == "normal" ? sim::JitterKind::kNormal : sim::JitterKind::kLognormal;
  h.straggler_probability = c.straggler_probability;
  h.straggler_factor = c.straggler_factor;
  h.straggler_iterations = c.straggler_iterations;
  s.trace_path = c.trace;
  sim::check(s);
  return s;
}

// "server_in 93% (max 95%), node_out 40% ..." for the table.
std::string utilisation_line(const sim::DesResult& r) {
  std::string line;
  for (const auto& u : r.utilisation) {
    char part[96];
    std::snprintf(part, sizeof part, "%s%s %.0f%% (max %.0f%%)", line.empty() ? "" : ", ", u.name.c_str(), 100 * u.mean,
                  100 * u.max);
    line += part;
  }
  return line;
}

std::string histogram_line(const std::map<int64_t, int64_t>& h) {
  std::string line;
  for (const auto& [value, count] : h) {
    line += (line.empty() ? "" : " ") + std::to_string(value) + ":" + std::to_string(count);
  }
  return line;
}

// The simulated figures of every worker count, as a table and in JSON.
nlohmann::json run_discrete_events(const SimulateCommand& c, const sim::ModelProfile& profile,
                                   const sim::ClusterDescription& cluster) {
  require(c.trace.empty() || c.workers.size() == 1, "--trace: give one --workers count (a trace is of one run)");
  std::vector<sim::DesSettings> runs;  // every count's settings checked before the first runs
  // A decentralized algorithm needs a peer: in a sweep, one worker is left out (as distsgd train refuses it).
  const bool decentralized = c.algorithm == "gosgd" || c.algorithm == "gossip" || c.algorithm == "sgp" ||
                             c.algorithm == "adpsgd" || c.slowmo_base == "sgp";
  for (const int64_t workers : c.workers) {
    if (decentralized && workers == 1 && c.workers.size() > 1) continue;
    runs.push_back(des_settings(c, workers));
  }
  std::cout << c.algorithm << arsgd_variant(c) << ", " << profile.model << " batch " << profile.batch_size
            << " per worker, on " << cluster.name << " (" << cluster.source << "); discrete-event, " << c.iterations
            << " iterations after " << c.warmup << " of warm-up, seed " << c.seed << "\n"
            << "  workers  iteration_ms  p95_ms  samples/s  efficiency  exposed_comm_ms  MB_sent/iter\n";
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& settings : runs) {
    const auto r = sim::simulate_discrete_events(profile, cluster, settings);
    char line[160];
    std::snprintf(line, sizeof line, "  %7lld  %12.3f  %6.3f  %9.0f  %9.1f%%  %15.3f  %12.3f\n",
                  static_cast<long long>(settings.workers), r.iteration_seconds * 1e3, r.p95_seconds * 1e3,
                  r.samples_per_second, 100 * r.scaling_efficiency, r.exposed_communication_seconds * 1e3,
                  r.bytes_per_worker / 1e6);
    std::cout << line << "           utilisation: " << utilisation_line(r) << "\n";
    const bool peer_to_peer = r.servers == 0;
    if (!r.staleness.empty()) {
      std::cout << (peer_to_peer ? "           age of merged models (iterations: merges): "
                                 : "           staleness (server updates: gradients): ")
                << histogram_line(r.staleness) << "\n";
    }
    if (!r.clock_gap.empty()) {
      std::cout << "           clock gap at each iteration's start (clocks: iterations): "
                << histogram_line(r.clock_gap) << "\n";
    }
    char simulated[160];
    std::snprintf(simulated, sizeof simulated, "           simulated %.3f s (%lld events) in %.3f s\n",
                  r.simulated_seconds, static_cast<long long>(r.events), r.wall_seconds);
    std::cout << simulated;
    rows.push_back({{"workers", settings.workers},
                    {"iteration_seconds", r.iteration_seconds},
                    {"samples_per_second", r.samples_per_second},
                    {"scaling_efficiency", r.scaling_efficiency},
                    {"exposed_communication_seconds", r.exposed_communication_seconds},
                    {"des", sim::to_json(r)}});
  }
  if (!c.trace.empty()) std::cout << "trace: " << c.trace << "\n";
  std::cout.flush();
  return rows;
}

// The analytical models have no processor contention: with `cores` shared by every rank, the workers' compute is
// stretched as if all of them computed at once (an upper bound: waits for the network leave cores free).
sim::ModelProfile on_shared_cores(sim::ModelProfile profile, int64_t cores, int64_t workers) {
  if (cores <= 0 || workers <= cores) return profile;
  const double stretch = static_cast<double>(workers) / static_cast<double>(cores);
  for (auto& t : profile.tensors) {
    t.forward_seconds *= stretch;
    t.backward_seconds *= stretch;
  }
  profile.update_seconds_per_byte *= stretch;
  return profile;
}

}  // namespace

sim::Prediction predict_analytical(const SimulateCommand& c, const sim::ModelProfile& profile,
                                   const sim::ClusterDescription& cluster, int64_t workers) {
  const int64_t ranks = workers + (sim::uses_servers(c.algorithm) ? c.servers : 0);
  return predictor_of(c.algorithm)(c, on_shared_cores(sim::as_run_on(profile, cluster), cluster.shared_cores, workers),
                                   sim::with_busy_delivery_in_alpha(cluster, ranks), workers);
}

bool simulate_takes_flag(const std::string& flag) {
  // simulate's option table, built once: the harness asks it for every flag of every cell, recipe and point.
  struct Table {
    CLI::App app;
    SimulateCommand settings;  // the options write here; it lives as long as the table
    const CLI::App* command = add_simulate_command(app, settings);
  };
  static const Table table;
  return table.command->get_option_no_throw(flag) != nullptr;
}

SimulateCommand simulate_command_from(const std::vector<std::string>& args) {
  CLI::App app;
  SimulateCommand c;
  add_simulate_command(app, c);
  std::vector<std::string> words{"simulate"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<std::string> reversed(words.rbegin(), words.rend());  // CLI11 takes the arguments last first
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw Error("simulator settings '" + join(args, " ") + "': " + e.what());
  }
  return c;
}

CLI::App* add_simulate_command(CLI::App& app, SimulateCommand& c) {
  auto* cmd = app.add_subcommand("simulate",
                                 "predict an algorithm's throughput and scaling efficiency for a profile (distsgd "
                                 "profile) on a cluster; analytical model or discrete-event simulation");
  cmd->add_option("--profile", c.profile, "profile JSON written by distsgd profile")->required();
  cmd->add_option("--cluster", c.cluster, "cluster JSON file, or a preset: " + join(sim::cluster_preset_names()))
      ->capture_default_str();
  cmd->add_option("--algo", c.algorithm, join_or(predictor_names()))->capture_default_str();
  cmd->add_option("--gossip-prob", c.gossip_probability, "gosgd: probability of a push per step")
      ->capture_default_str();
  cmd->add_option("--sgp-overlap", c.sgp_overlap, "sgp: 1 overlaps the push with the next step, 0 does not")
      ->capture_default_str();
  cmd->add_option("--sync-every", c.sync_every, "localsgd, slowmo, diloco: inner steps between exchanges (H)")
      ->capture_default_str();
  cmd->add_option("--base", c.slowmo_base,
                  "slowmo: localsgd (local steps between the exact averages) or sgp (an SGP push to the exponential "
                  "graph's peer every step, without overlap)")
      ->capture_default_str();
  cmd->add_option("--fragments", c.fragments, "diloco: fragments synchronised in turn (Streaming DiLoCo)")
      ->capture_default_str();
  cmd->add_option("--fragment-delay", c.fragment_delay, "diloco: inner steps a fragment's exchange overlaps")
      ->capture_default_str();
  cmd->add_option("--outer-bits", c.outer_bits, "diloco: bits per exchanged value: 32, 16, 8 or 4")
      ->capture_default_str();
  cmd->add_option("--overlap", c.overlap,
                  "arsgd: none, wfbp (bucketed, as distsgd train), mgwfbp (MG-WFBP's merged layers), merge-optimal "
                  "(the best merge, found exactly) or multistep (as distsgd train)")
      ->capture_default_str();
  cmd->add_flag_callback(
      "--list-clusters",
      [] {
        std::cout << sim::describe_cluster_presets();
        throw CLI::Success();  // like --help: nothing else runs, and --profile is not needed
      },
      "print the cluster presets with their links and sources, and exit");
  cmd->add_option("--bucket-mb", c.bucket_mb, "arsgd wfbp: bucket size, MB")->capture_default_str();
  cmd->add_option("--first-bucket-mb", c.first_bucket_mb, "arsgd wfbp: first bucket size, MB")->capture_default_str();
  cmd->add_option("--servers", c.servers, "parameter-server shards")->capture_default_str();
  cmd->add_option("--staleness", c.staleness, "ssp: staleness bound s")->capture_default_str();
  cmd->add_option("--tau", c.tau, "easgd: iterations between exchanges")->capture_default_str();
  cmd->add_option("--pi", c.pi, "aladdin: gradients between the server's replies")->capture_default_str();
  cmd->add_option("--workers", c.workers, "worker counts to predict, e.g. 1,2,4,8")->delimiter(',');
  cmd->add_option("--out", c.out, "JSON file for the predictions");
  cmd->add_option("--fidelity", c.fidelity,
                  "analytical (the default: closed forms, microseconds a prediction, for sweeps; homogeneous workers, "
                  "no contention) or des (discrete-event simulation of every worker, server and flow: contention, "
                  "asynchrony, stragglers, a trace; about a second per 100,000 worker iterations)")
      ->capture_default_str();
  const std::string des = "des: ";
  cmd->add_option("--iterations", c.iterations, des + "iterations each worker runs after the warm-up")
      ->capture_default_str();
  cmd->add_option("--warmup", c.warmup, des + "iterations each worker runs first, not measured")->capture_default_str();
  cmd->add_option("--seed", c.seed, des + "seed of every random draw (jitter, stragglers, peers)")
      ->capture_default_str();
  cmd->add_option("--prefetch", c.prefetch, des + "batches the loader reads ahead (0: on demand), as distsgd train")
      ->capture_default_str();
  cmd->add_option("--collectives", c.collectives,
                  des + "steps (every step of a ring), flows (one flow per ring edge) or auto (steps up to 64 workers)")
      ->capture_default_str();
  cmd->add_option("--shared-cores", c.shared_cores,
                  "every rank (workers, servers) shares this many cores, as on the one host where distsgd validate "
                  "and the emulated cluster run (0: a processor per rank, as on a real cluster; default: the "
                  "cluster's shared_cores, which commbench --cluster-out sets to this host's). des: fair sharing; "
                  "analytical: compute times x max(1, workers / cores)")
      ->check(CLI::Range(int64_t{-1}, int64_t{1} << 20));
  cmd->add_option("--sharding", c.sharding, "parameter-server sharding: memory or layer, as distsgd train")
      ->capture_default_str();
  cmd->add_option("--local-aggregation", c.local_aggregation,
                  "bsp: none, or host (the workers of a node sum their gradients and one of them pushes, as distsgd "
                  "train)")
      ->capture_default_str();
  cmd->add_option("--compress", c.compress,
                  "none, dgc (des: arsgd, bsp, asp, ssp: the sparse gradient uplink) or powersgd (arsgd: rank --rank "
                  "approximations after backward; diloco: of the pseudo-gradient at each exchange; analytical: from "
                  "--powersgd-start on)")
      ->capture_default_str();
  cmd->add_option("--rank", c.rank, "powersgd: the rank of each matrix's approximation")->capture_default_str();
  cmd->add_option("--powersgd-start", c.powersgd_start, des + "powersgd: plain allreduce steps before compression")
      ->capture_default_str();
  cmd->add_option("--density", c.density, des + "dgc: fraction of each tensor sent")->capture_default_str();
  cmd->add_option("--aladdin-variant", c.aladdin_variant, des + "aladdin: full, l1 or l2, as distsgd train")
      ->capture_default_str();
  cmd->add_option("--gossip-mode", c.gossip_mode, des + "gossip: pull or push, as distsgd train")
      ->capture_default_str();
  cmd->add_option("--slowdown", c.slowdowns,
                  des +
                      "worker RANK takes FACTOR times its compute time, as distsgd train --slowdown (repeatable; with "
                      "several --workers counts, where RANK exists)")
      ->type_name("RANK:FACTOR");
  cmd->add_option("--compute-multiplier", c.compute_multipliers,
                  des + "worker RANK's forward, backward and update take FACTOR times as long (repeatable)")
      ->type_name("RANK:FACTOR");
  cmd->add_option("--link-multiplier", c.link_multipliers,
                  des + "worker RANK's link takes FACTOR times as long (its rate / FACTOR; repeatable)")
      ->type_name("RANK:FACTOR");
  cmd->add_option("--jitter-cv", c.jitter_cv,
                  des + "each iteration's compute times a random factor of mean 1 and this coefficient of variation")
      ->capture_default_str();
  cmd->add_option("--jitter", c.jitter, des + "the jitter's distribution: lognormal or normal")->capture_default_str();
  cmd->add_option("--straggler-prob", c.straggler_probability,
                  des + "probability, per worker and iteration, that a straggler episode starts")
      ->capture_default_str();
  cmd->add_option("--straggler-factor", c.straggler_factor, des + "compute slowdown during an episode")
      ->capture_default_str();
  cmd->add_option("--straggler-iterations", c.straggler_iterations, des + "iterations an episode lasts")
      ->capture_default_str();
  cmd->add_option("--trace", c.trace,
                  des +
                      "Chrome trace of the simulated run (one --workers count), spans named as distsgd train "
                      "--trace names them");
  return cmd;
}

int run_simulate(const SimulateCommand& c) {
  predictor_of(c.algorithm, "--algo: ");  // an unknown algorithm is said before any file is read
  require(c.gossip_probability >= 0 && c.gossip_probability <= 1, "--gossip-prob must be in [0, 1]");
  require(c.staleness >= 0 && c.tau >= 1 && c.pi >= 1,
          "--staleness must not be negative, --tau and --pi must be at least 1");
  sim::allreduce_settings(c.overlap, 0, 0);  // throws for an unknown --overlap
  require(c.servers >= 1, "--servers must be at least 1");
  require(c.bucket_mb >= 0 && c.first_bucket_mb >= 0, "--bucket-mb and --first-bucket-mb must not be negative");
  require(!c.workers.empty(), "--workers: give at least one worker count");
  for (const int64_t w : c.workers) require(w >= 1, "--workers: " + std::to_string(w) + " is not a worker count");
  require(c.fidelity == "analytical" || c.fidelity == "des",
          "--fidelity must be analytical or des (got '" + c.fidelity + "')");
  const bool heterogeneous = !c.slowdowns.empty() || !c.compute_multipliers.empty() || !c.link_multipliers.empty() ||
                             c.jitter_cv > 0 || c.straggler_probability > 0;
  require(c.fidelity == "des" || (c.trace.empty() && !heterogeneous && c.compress != "dgc"),
          "--trace, --compress dgc and heterogeneity (--slowdown, --compute-multiplier, --link-multiplier, "
          "--jitter-cv, --straggler-prob) need --fidelity des");
  require(c.compress != "powersgd" || c.algorithm == "arsgd" || c.algorithm == "diloco",
          "--compress powersgd applies to arsgd and diloco (got --algo " + c.algorithm + ")");
  require(c.compress != "powersgd" || c.rank >= 1, "--rank must be at least 1 (got " + std::to_string(c.rank) + ")");
  require(c.slowmo_base == "localsgd" || c.slowmo_base == "sgp",
          "--base must be localsgd or sgp (got '" + c.slowmo_base + "')");
  require(c.slowmo_base == "localsgd" || c.algorithm == "slowmo", "--base sgp applies to slowmo only");
  require(c.sharding == "memory" || c.sharding == "layer",
          "--sharding must be memory or layer (got '" + c.sharding + "')");
  require(c.local_aggregation == "none" || c.local_aggregation == "host",
          "--local-aggregation must be none or host (got '" + c.local_aggregation + "')");
  require(c.local_aggregation == "none" || c.algorithm == "bsp", "--local-aggregation host applies to bsp only");
  auto cluster = sim::load_cluster(c.cluster);
  if (c.shared_cores >= 0) cluster.shared_cores = c.shared_cores;
  const auto measured_profile = sim::load_model_profile(c.profile);
  const auto profile = sim::as_run_on(measured_profile, cluster);
  if (c.fidelity == "des") {
    const auto rows = run_discrete_events(c, profile, cluster);
    if (!c.out.empty()) {
      write_json_atomically(c.out, {{"fidelity", "des"},
                                    {"algorithm", c.algorithm},
                                    {"overlap", c.overlap},
                                    {"bucket_mb", c.bucket_mb},
                                    {"first_bucket_mb", c.first_bucket_mb},
                                    {"servers", c.servers},
                                    {"sharding", c.sharding},
                                    {"compress", c.compress},
                                    {"density", c.density},
                                    {"rank", c.rank},
                                    {"powersgd_start", c.powersgd_start},
                                    {"staleness", c.staleness},
                                    {"tau", c.tau},
                                    {"pi", c.pi},
                                    {"aladdin_variant", c.aladdin_variant},
                                    {"gossip_probability", c.gossip_probability},
                                    {"gossip_mode", c.gossip_mode},
                                    {"sgp_overlap", c.sgp_overlap},
                                    {"sync_every", c.sync_every},
                                    {"base", c.slowmo_base},
                                    {"iterations", c.iterations},
                                    {"warmup", c.warmup},
                                    {"seed", c.seed},
                                    {"prefetch", c.prefetch},
                                    {"collectives", c.collectives},
                                    {"heterogeneity",
                                     {{"slowdowns", c.slowdowns},
                                      {"compute_multipliers", c.compute_multipliers},
                                      {"link_multipliers", c.link_multipliers},
                                      {"jitter_cv", c.jitter_cv},
                                      {"jitter", c.jitter},
                                      {"straggler_probability", c.straggler_probability},
                                      {"straggler_factor", c.straggler_factor},
                                      {"straggler_iterations", c.straggler_iterations}}},
                                    {"profile", c.profile},
                                    {"cluster", sim::to_json(cluster)},
                                    {"predictions", rows}});
    }
    return 0;
  }

  nlohmann::json rows = nlohmann::json::array();
  std::cout << c.algorithm << arsgd_variant(c) << ", " << profile.model << " batch " << profile.batch_size
            << " per worker, on " << cluster.name << " (" << cluster.source << "); analytical\n"
            << "  workers  iteration_ms  samples/s  efficiency  exposed_comm_ms\n";
  for (const int64_t workers : c.workers) {
    const auto p = predict_analytical(c, measured_profile, cluster, workers);
    char line[128];
    std::snprintf(line, sizeof line, "  %7lld  %12.3f  %9.0f  %9.1f%%  %15.3f\n", static_cast<long long>(workers),
                  p.iteration_seconds * 1e3, p.samples_per_second, 100 * p.scaling_efficiency,
                  p.exposed_communication_seconds * 1e3);
    std::cout << line;
    rows.push_back({{"workers", workers},
                    {"iteration_seconds", p.iteration_seconds},
                    {"samples_per_second", p.samples_per_second},
                    {"scaling_efficiency", p.scaling_efficiency},
                    {"exposed_communication_seconds", p.exposed_communication_seconds}});
  }
  std::cout.flush();
  if (!c.out.empty()) {
    write_json_atomically(c.out, {{"fidelity", "analytical"},
                                  {"algorithm", c.algorithm},
                                  {"overlap", c.overlap},
                                  {"bucket_mb", c.bucket_mb},
                                  {"first_bucket_mb", c.first_bucket_mb},
                                  {"servers", c.servers},
                                  {"staleness", c.staleness},
                                  {"tau", c.tau},
                                  {"pi", c.pi},
                                  {"profile", c.profile},
                                  {"cluster", sim::to_json(cluster)},
                                  {"predictions", rows}});
  }
  return 0;
}

}  // namespace distsgd::cli
