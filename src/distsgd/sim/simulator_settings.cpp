#include "distsgd/sim/simulator_settings.hpp"

#include "distsgd/catalog/algorithm_catalog.hpp"
#include "distsgd/catalog/algorithm_options.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/sim/algorithm_predictions.hpp"
#include "distsgd/sim/analytical/synchronous_model.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"

#include <type_traits>
#include <utility>

namespace distsgd::sim {
namespace {

using S = SimulatorSettings;

// An option held in a field of SimulatorSettings or of the AlgorithmSettings it extends (a member of the base, whose
// pointer field_option takes as one of S once its types are given).
template <class T, class Owner>
SimulatorOption option(std::string flag, T Owner::*field, std::string help, Rule<T> rule = {}) {
  static_assert(std::is_base_of_v<Owner, S>);
  return field_option<T, S>(std::move(flag), field, std::move(help), std::move(rule));
}

// A cluster figure's names, after "cluster" (the default: the cluster's own).
std::vector<std::string> with_cluster(std::vector<std::string> names) {
  names.insert(names.begin(), "cluster");
  return names;
}

Rule<std::string> one_of(std::vector<std::string> names) {
  const std::string must = "must be " + join_or(names);
  return {[names](const std::string& v) { return std::find(names.begin(), names.end(), v) != names.end(); }, must};
}

// One declared in the catalogue, as distsgd train takes it (catalog/algorithm_options.hpp).
template <class T, class Owner>
SimulatorOption option(const catalog::options::Declared<T>& declared, T Owner::*field) {
  return option(declared.flag, field, declared.help, declared.rule);
}

// A name declared in the catalogue, held as its word: train's words, and any the simulator models beyond them
// (`simulator_words`, described by `simulator_help`).
template <class E, class Owner>
SimulatorOption option(const catalog::options::Declared<E>& declared, std::string Owner::*field,
                       std::vector<std::string> simulator_words = {}, const std::string& simulator_help = "") {
  static_assert(std::is_enum_v<E>);
  auto words = enum_name_list<E>();
  words.insert(words.end(), simulator_words.begin(), simulator_words.end());
  auto spec = option(declared.flag, field, declared.help + simulator_help, one_of(words));
  spec.value_name = join(words, "|");  // as train's --help shows an enumeration
  return spec;
}

Rule<std::vector<int64_t>> worker_counts() {
  return {[](const std::vector<int64_t>& counts) {
            return !counts.empty() && std::all_of(counts.begin(), counts.end(), [](int64_t w) { return w >= 1; });
          },
          "must be one or more worker counts, each at least 1"};
}

std::vector<SimulatorOption> declare_options() {
  const std::string des = "des: ";
  return {
      option("--profile", &S::profile, "profile JSON written by distsgd profile (required)"),
      option("--cluster", &S::cluster, "cluster JSON file, or a preset: " + join(cluster_preset_names())),
      option("--algo", &S::algorithm, join_or(catalog::simulated_algorithms()), one_of(catalog::simulated_algorithms()))
          .named("algorithm"),
      option(catalog::options::kGossipProbability, &S::gossip_probability),
      option(catalog::options::kSgpOverlap, &S::sgp_overlap),
      option(catalog::options::kSyncEvery, &S::sync_every),
      option(catalog::options::kSlowMoBase, &S::slowmo_base),
      option(catalog::options::kFragments, &S::fragments),
      option(catalog::options::kFragmentDelay, &S::fragment_delay),
      option(catalog::options::kOuterBits, &S::outer_bits),
      option(catalog::options::kOverlap, &S::overlap, {"mgwfbp", "merge-optimal"},
             "; simulate also: mgwfbp (MG-WFBP's merged layers) or merge-optimal (the best merge, "
             "found exactly)"),
      option("--bucket-mb", &S::bucket_mb, "arsgd wfbp: bucket size, MB", non_negative<double>()),
      option("--first-bucket-mb", &S::first_bucket_mb, "arsgd wfbp: first bucket size, MB", non_negative<double>()),
      option("--servers", &S::servers, "parameter-server shards", at_least<int64_t>(1)),
      option(catalog::options::kStaleness, &S::staleness),
      option(catalog::options::kTau, &S::tau),
      option(catalog::options::kPi, &S::pi),
      list_option("--workers", &S::workers, "worker counts to predict, e.g. 1,2,4,8", worker_counts()).split_at(','),
      option("--out", &S::out, "JSON file for the predictions"),
      option("--fidelity", &S::fidelity,
             "analytical (the default: closed forms, microseconds a prediction, for sweeps; homogeneous "
             "workers, no contention) or des (discrete-event simulation of every worker, server and flow: "
             "contention, asynchrony, stragglers, a trace; about a second per 100,000 worker iterations)",
             one_of({"analytical", "des"})),
      option("--iterations", &S::iterations, des + "iterations each worker runs after the warm-up",
             at_least<int64_t>(1)),
      option("--warmup", &S::warmup, des + "iterations each worker runs first, not measured", non_negative<int64_t>()),
      option("--seed", &S::seed, des + "seed of every random draw (jitter, stragglers, peers)",
             non_negative<int64_t>()),
      option("--prefetch", &S::prefetch, des + "batches the loader reads ahead (0: on demand), as distsgd train",
             non_negative<int64_t>()),
      option("--collectives", &S::collectives,
             des + "steps (every step of a ring), flows (one flow per ring edge) or auto (steps up to 64 workers)",
             one_of({"auto", "steps", "flows"})),
      option("--shared-cores", &S::shared_cores,
             "every rank (workers, servers) shares this many cores, as on the one host where distsgd validate "
             "and the emulated cluster run (0: a processor per rank, as on a real cluster; -1, the default: the "
             "cluster's shared_cores, which commbench --cluster-out sets to this host's). des: fair sharing; "
             "analytical: compute times x max(1, workers / cores); a measured capacity may be fractional "
             "(distsgd profile --ranks-at-once)",
             within<double>(-1, 1 << 20)),
      option("--server-placement", &S::server_placement,
             "where the parameter servers run: own_links (each behind a link of its own, as distsgd's servers) or "
             "worker_nodes (server s on node s mod nodes, sharing the nodes' links, as TensorFlow's distributed "
             "runs and BytePS) or cluster (the default: the cluster's server_placement)",
             one_of(with_cluster(enum_name_list<ClusterDescription::ServerPlacement>()))),
      option(catalog::options::kSharding, &S::sharding),
      option(catalog::options::kLocalAggregation, &S::local_aggregation),
      option(catalog::options::kCompress, &S::compress, {},
             "; simulate: dgc in des only (arsgd, bsp, asp, ssp: the sparse gradient uplink)"),
      option(catalog::options::kPowerSgdRank, &S::rank),
      option(catalog::options::kPowerSgdStart, &S::powersgd_start),
      option("--density", &S::density, des + "dgc: fraction of each tensor sent"),
      option(catalog::options::kAladdinVariant, &S::aladdin_variant),
      option(catalog::options::kGossipMode, &S::gossip_mode),
      list_option("--slowdown", &S::slowdowns,
                  des + "worker RANK takes FACTOR times its compute time, as distsgd train --slowdown (repeatable; "
                        "with several --workers counts, where RANK exists)")
          .shown_as("RANK:FACTOR"),
      list_option("--compute-multiplier", &S::compute_multipliers,
                  des + "worker RANK's forward, backward and update take FACTOR times as long (repeatable)")
          .shown_as("RANK:FACTOR"),
      list_option("--link-multiplier", &S::link_multipliers,
                  des + "worker RANK's link takes FACTOR times as long (its rate / FACTOR; repeatable)")
          .shown_as("RANK:FACTOR"),
      option("--jitter-cv", &S::jitter_cv,
             des + "each iteration's compute times a random factor of mean 1 and this coefficient of variation",
             non_negative<double>()),
      option("--jitter", &S::jitter, des + "the jitter's distribution: lognormal or normal",
             one_of({"lognormal", "normal"})),
      option("--straggler-prob", &S::straggler_probability,
             des + "probability, per worker and iteration, that a straggler episode starts", within(0.0, 1.0)),
      option("--straggler-factor", &S::straggler_factor, des + "compute slowdown during an episode"),
      option("--straggler-iterations", &S::straggler_iterations, des + "iterations an episode lasts"),
      option("--trace", &S::trace,
             des + "Chrome trace of the simulated run (one --workers count), spans named as distsgd train "
                   "--trace names them"),
  };
}

}  // namespace

const std::vector<SimulatorOption>& simulator_options() {
  static const std::vector<SimulatorOption> options = declare_options();
  return options;
}

bool simulator_takes_flag(const std::string& flag) { return declares_flag(simulator_options(), flag); }

ClusterDescription as_simulated(ClusterDescription cluster, const SimulatorSettings& settings) {
  if (settings.shared_cores >= 0) cluster.shared_cores = settings.shared_cores;
  if (settings.server_placement != "cluster") {
    cluster.server_placement = server_placement_named(settings.server_placement, "--server-placement: ");
  }
  return cluster;
}

void check(const SimulatorSettings& c) {
  for (const auto& spec : simulator_options()) {
    if (spec.check) spec.check(c);
  }
  const bool heterogeneous = !c.slowdowns.empty() || !c.compute_multipliers.empty() || !c.link_multipliers.empty() ||
                             c.jitter_cv > 0 || c.straggler_probability > 0;
  require(c.fidelity == "des" || (c.trace.empty() && !heterogeneous && c.compress != "dgc"),
          "--trace, --compress dgc and heterogeneity (--slowdown, --compute-multiplier, --link-multiplier, "
          "--jitter-cv, --straggler-prob) need --fidelity des");
  require(c.compress != "powersgd" || c.algorithm == "arsgd" || c.algorithm == "diloco",
          "--compress powersgd applies to arsgd and diloco (got --algo " + c.algorithm + ")");
  require(c.compress != "powersgd" || c.rank >= 1, "--rank must be at least 1 (got " + std::to_string(c.rank) + ")");
  require(c.compress != "dgc" || (c.density > 0 && c.density <= 1), "--density must be in (0, 1]");
  require(c.slowmo_base == "localsgd" || c.algorithm == "slowmo", "--base sgp applies to slowmo only");
  require(c.local_aggregation == "none" || c.algorithm == "bsp", "--local-aggregation host applies to bsp only");
  require(c.trace.empty() || c.workers.size() == 1, "--trace: give one --workers count (a trace is of one run)");
}

SimulatorSettings simulator_settings_from(const std::vector<std::string>& words) {
  SimulatorSettings settings;
  try {
    parse_option_words(simulator_options(), words, settings);
    check(settings);
  } catch (const Error& e) {
    throw Error("simulator settings '" + join(words, " ") + "': " + e.what());
  }
  return settings;
}

}  // namespace distsgd::sim
