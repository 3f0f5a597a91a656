#include "distsgd/sim/algorithm_predictions.hpp"

#include <algorithm>
#include <deque>
#include <utility>

#include "distsgd/catalog/algorithm_catalog.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/rank_factor.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/sim/analytical/asynchronous_model.hpp"
#include "distsgd/sim/analytical/decentralized_model.hpp"
#include "distsgd/sim/analytical/outer_model.hpp"
#include "distsgd/sim/analytical/powersgd_model.hpp"
#include "distsgd/sim/analytical/synchronous_model.hpp"
#include "distsgd/sim/des/discrete_event_simulator.hpp"
#include "distsgd/sim/des/workload.hpp"
#include "distsgd/sim/platform/heterogeneity.hpp"

namespace distsgd::sim {
namespace {

constexpr double kMB = 1024.0 * 1024.0;  // as --bucket-mb of distsgd train (AllreduceWorker::buckets_from_flags)

PsLayout ps_layout(const SimulatorSettings& c) {
  return {c.sharding, c.local_aggregation == "host", c.overlap == "wfbp", c.bucket_mb * kMB, c.first_bucket_mb * kMB};
}

// The built-in algorithms' models, by their names in `distsgd train --algo`.
std::deque<AlgorithmModel> builtin_models() {
  using C = const SimulatorSettings&;
  using P = const ModelProfile&;
  using L = const ClusterDescription&;
  const WorkloadFactory allreduce = make_allreduce_workload, ps = make_parameter_server_workload,
                        decentralized = make_decentralized_workload, outer = make_outer_workload;
  return {
      {"arsgd",
       [](C c, P p, L l, int64_t w) {
         if (c.compress == "powersgd") return predict_powersgd(p, w, c.rank, l);
         return predict_allreduce_sgd(p, w, l,
                                      allreduce_settings(c.overlap, c.bucket_mb * kMB, c.first_bucket_mb * kMB));
       },
       allreduce,
       {"--dgc-clip-norm"}},
      {"bsp",
       [](C c, P p, L l, int64_t w) { return predict_bsp(p, w, c.servers, l, ps_layout(c)); },
       ps,
       {"--dgc-clip-norm"}},
      {"asp",
       [](C c, P p, L l, int64_t w) { return predict_asp(p, w, c.servers, l, ps_layout(c)); },
       ps,
       {"--momentum-at", "--dgc-clip-norm"}},
      {"ssp",
       [](C c, P p, L l, int64_t w) { return predict_ssp(p, w, c.servers, c.staleness, l, ps_layout(c)); },
       ps,
       {"--momentum-at", "--dgc-clip-norm"}},
      {"easgd",
       [](C c, P p, L l, int64_t w) { return predict_easgd(p, w, c.servers, c.tau, l, ps_layout(c)); },
       ps,
       {"--moving-rate"}},
      {"aladdin",
       [](C c, P p, L l, int64_t w) { return predict_aladdin(p, w, c.servers, c.pi, l, ps_layout(c)); },
       ps,
       {"--aladdin-alpha", "--momentum-at"}},
      {"gosgd", [](C c, P p, L l, int64_t w) { return predict_gosgd(p, w, c.gossip_probability, l); }, decentralized},
      {"gossip", [](C c, P p, L l, int64_t w) { return predict_gossip(p, w, c.gossip_mode == "pull", l); },
       decentralized},
      {"sgp", [](C c, P p, L l, int64_t w) { return predict_sgp(p, w, c.sgp_overlap > 0, l); }, decentralized},
      {"adpsgd", [](C, P p, L l, int64_t w) { return predict_adpsgd(p, w, l); }, decentralized},
      // Slow momentum and the outer optimizer cost an update over the fragment, as the plain average does.
      {"localsgd", [](C c, P p, L l, int64_t w) { return predict_outer_loop(p, w, l, {c.sync_every}); }, outer},
      {"slowmo",
       [](C c, P p, L l, int64_t w) {
         return predict_outer_loop(p, w, l, {c.sync_every, 1, 0, 32, 0, c.slowmo_base == "sgp"});
       },
       outer},
      {"diloco",
       [](C c, P p, L l, int64_t w) {
         const int64_t rank = c.compress == "powersgd" ? c.rank : 0;
         return predict_outer_loop(p, w, l, {c.sync_every, c.fragments, c.fragment_delay, c.outer_bits, rank});
       },
       outer},
  };
}

// Every algorithm the simulator predicts: a deque, so that registering one keeps the references algorithm_model()
// returned.
std::deque<AlgorithmModel>& models() {
  static std::deque<AlgorithmModel> all = builtin_models();
  return all;
}

// RANK:FACTOR values; over several worker counts, each applies where its worker exists (and must exist in the
// largest).
std::vector<std::pair<int64_t, double>> rank_factors(const std::string& flag, const std::vector<std::string>& texts,
                                                     int64_t workers, int64_t most_workers) {
  std::vector<std::pair<int64_t, double>> factors;
  for (const auto& text : texts) {
    const auto factor = parse_rank_factor(flag, text);
    if (factor.first < workers || factor.first >= most_workers) factors.push_back(factor);  // checked later
  }
  return factors;
}

// The analytical models have no processor contention: with `cores` shared by every rank, the workers' compute is
// stretched as if all of them computed at once (an upper bound: waits for the network leave cores free), each taking
// `cpu_seconds` of the cores per iteration where that is known (ClusterDescription::compute_cpu_scale), else its
// compute as run.
ModelProfile on_shared_cores(ModelProfile as_run, double cores, int64_t workers, double cpu_seconds) {
  if (cores <= 0 || static_cast<double>(workers) <= cores) return as_run;
  const double share = static_cast<double>(workers) / cores, compute = compute_seconds(as_run);
  const double factor = cpu_seconds > 0 && compute > 0 ? std::max(1.0, share * cpu_seconds / compute) : share;
  return with_compute_stretched(std::move(as_run), factor);
}

}  // namespace

bool charges_communication_cpu(const ClusterDescription& cluster, int64_t workers) {
  return cluster.shared_cores > 0 && cluster.communication_cpu_seconds_per_byte > 0 && workers >= 2;
}

void register_algorithm_model(AlgorithmModel model) {
  require(!model.name.empty() && model.analytical && model.workload,
          "an algorithm's simulator model needs a name, an analytical model and a workload");
  require(find_algorithm_model(model.name) == nullptr, "the simulator already has a model of '" + model.name + "'");
  models().push_back(std::move(model));
}

const AlgorithmModel* find_algorithm_model(const std::string& name) {
  const auto& all = models();
  const auto it = std::find_if(all.begin(), all.end(), [&](const auto& m) { return m.name == name; });
  return it == all.end() ? nullptr : &*it;
}

const AlgorithmModel& algorithm_model(const std::string& name) {
  const auto* model = find_algorithm_model(name);
  require(model != nullptr, "--algo must be " + join_or(predicted_algorithms()) + " (got '" + name + "')");
  return *model;
}

std::vector<std::string> predicted_algorithms() {
  std::vector<std::string> names;
  for (const auto& model : models()) names.push_back(model.name);
  return names;
}

Prediction predict_analytical(const SimulatorSettings& c, const ModelProfile& profile,
                              const ClusterDescription& cluster, int64_t workers, double bytes_per_iteration) {
  const auto& model = algorithm_model(c.algorithm);
  const int64_t ranks = workers + (catalog::needs_servers(c.algorithm) ? c.servers : 0);
  auto as_run = as_run_on(profile, cluster);
  // What a worker's iteration takes of the shared cores, where the runs measured it: its compute's CPU and its
  // communication's.
  double cpu_seconds = cluster.compute_cpu_scale * compute_seconds(profile);
  if (charges_communication_cpu(cluster, workers)) {
    if (bytes_per_iteration < 0) bytes_per_iteration = communication_bytes_per_iteration(c, profile, cluster, workers);
    const double before = compute_seconds(as_run);
    as_run = with_communication_cpu(as_run, cluster, bytes_per_iteration);
    if (cpu_seconds > 0) cpu_seconds += compute_seconds(as_run) - before;
  }
  const auto on_cores = on_shared_cores(as_run, cluster.shared_cores, workers, cpu_seconds);
  if (!cluster.delays_busy_deliveries(ranks)) return model.analytical(c, on_cores, cluster, workers);
  // A busy host delays a message only while the ranks computing take every core: the share of its time a worker
  // computes, from the prediction without the delay, gives the share of messages delayed.
  const auto without_delay = model.analytical(c, on_cores, with_busy_delivery_in_alpha(cluster, ranks, 0), workers);
  const double computing =
      without_delay.iteration_seconds > 0 ? compute_seconds(on_cores) / without_delay.iteration_seconds : 1.0;
  const double busy_share = busy_delivery_share(workers, cluster.busy_delivery_cores, computing);
  return model.analytical(c, on_cores, with_busy_delivery_in_alpha(cluster, ranks, busy_share), workers);
}

double communication_bytes_per_iteration(const SimulatorSettings& c, const ModelProfile& profile,
                                         const ClusterDescription& cluster, int64_t workers) {
  if (workers < 2) return 0;
  SimulatorSettings counting = c;
  counting.fidelity = "des";
  counting.workers = {workers};
  // Whole periods of the algorithm's rarer exchanges (EASGD's tau, ALADDIN's pi, local SGD's sync_every), at least
  // four of the longest: 64 steps for the defaults.
  counting.iterations = std::max<int64_t>(64, 4 * std::max({c.tau, c.pi, c.sync_every}));
  counting.warmup = 0;
  counting.trace.clear();
  counting.slowdowns.clear();
  counting.compute_multipliers.clear();
  counting.link_multipliers.clear();
  counting.jitter_cv = 0;
  counting.straggler_probability = 0;
  ClusterDescription plain = cluster;
  plain.communication_cpu_seconds_per_byte = 0;
  return simulate_discrete_events(profile, plain, des_settings(counting, workers)).bytes_per_worker;
}

ModelProfile with_communication_cpu(const ModelProfile& profile, const ClusterDescription& cluster,
                                    double bytes_per_iteration) {
  const double compute = compute_seconds(profile);
  if (cluster.shared_cores <= 0 || cluster.communication_cpu_seconds_per_byte <= 0 || compute <= 0) return profile;
  return with_compute_stretched(profile,
                                1 + 2 * bytes_per_iteration * cluster.communication_cpu_seconds_per_byte / compute);
}

DesSettings des_settings(const SimulatorSettings& c, int64_t workers) {
  DesSettings s;
  static_cast<AlgorithmSettings&>(s) = c;  // the algorithm, its settings and the run's length, as given
  s.workers = workers;
  s.bucket_bytes = c.bucket_mb * kMB;
  s.first_bucket_bytes = c.first_bucket_mb * kMB;
  s.density = c.compress == "dgc" ? c.density : 0;
  s.powersgd_rank = c.compress == "powersgd" ? c.rank : 0;
  // Only diloco takes fragments, a delay and quantised payloads (as distsgd train).
  if (c.algorithm != "diloco") {
    const AlgorithmSettings defaults;
    s.fragments = defaults.fragments;
    s.fragment_delay = defaults.fragment_delay;
    s.outer_bits = defaults.outer_bits;
  }
  s.seed = static_cast<uint64_t>(c.seed);
  auto& h = s.heterogeneity;
  const int64_t most = *std::max_element(c.workers.begin(), c.workers.end());
  h.slowdowns = rank_factors("--slowdown", c.slowdowns, workers, most);
  h.compute_factors = rank_factors("--compute-multiplier", c.compute_multipliers, workers, most);
  h.link_factors = rank_factors("--link-multiplier", c.link_multipliers, workers, most);
  h.jitter_cv = c.jitter_cv;
  h.jitter_kind = c.jitter == "normal" ? JitterKind::kNormal : JitterKind::kLognormal;
  h.straggler_probability = c.straggler_probability;
  h.straggler_factor = c.straggler_factor;
  h.straggler_iterations = c.straggler_iterations;
  s.trace_path = c.trace;
  check(s);
  return s;
}

std::string variant_text(const SimulatorSettings& c) {
  if (c.compress == "powersgd") return " (compress powersgd, rank " + std::to_string(c.rank) + ")";
  if (c.slowmo_base == "sgp") return " (base sgp)";
  // BSP's overlap and local aggregation change its prediction in both fidelities: the header says which.
  if (c.algorithm == "bsp" && c.compress != "dgc") {
    return " (overlap " + c.overlap + (c.local_aggregation == "host" ? ", local aggregation host" : "") + ")";
  }
  if (c.algorithm != "arsgd") return "";
  return " (overlap " + c.overlap + (c.compress == "dgc" ? ", compress dgc" : "") + ")";
}

bool is_peer_to_peer(const SimulatorSettings& c) { return catalog::peers_only(c.algorithm) || c.slowmo_base == "sgp"; }

}  // namespace distsgd::sim
