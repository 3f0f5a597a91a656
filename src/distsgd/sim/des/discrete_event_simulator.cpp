#include "distsgd/sim/des/discrete_event_simulator.hpp"
#include "distsgd/catalog/algorithm_catalog.hpp"
#include "distsgd/catalog/algorithm_choices.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/sim/algorithm_predictions.hpp"
#include "distsgd/sim/analytical/synchronous_model.hpp"
#include "distsgd/sim/des/context.hpp"
#include "distsgd/sim/des/worker_loop.hpp"
#include "distsgd/sim/des/workload.hpp"

namespace distsgd::sim {
namespace {

bool one_of(const std::string& value, std::initializer_list<const char*> names) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return value == n; });
}

// `word` is one of the words distsgd train takes for `flag` (catalog/algorithm_choices.hpp).
template <class E>
void require_word_of(const std::string& flag, const std::string& word, const std::string& context = "") {
  require(enum_from_name<E>(word).has_value(),
          flag + context + " must be " + join_or(enum_name_list<E>()) + " (got '" + word + "')");
}

std::unique_ptr<Workload> make_workload(DesContext& c) { return algorithm_model(c.settings.algorithm).workload(c); }

}  // namespace

void check(const DesSettings& s) {
  const auto* entry = catalog::find(s.algorithm);
  require(entry != nullptr && entry->simulated,
          "--algo: the simulator runs " + join(catalog::simulated_algorithms()) + " (got '" + s.algorithm + "')");
  require(s.workers >= 1, "--workers: " + std::to_string(s.workers) + " is not a worker count");
  require(s.iterations >= 1, "--iterations must be at least 1");
  require(s.warmup >= 0, "--warmup must not be negative");
  require(s.prefetch >= 0, "--prefetch must not be negative");
  // The analytical models' overlaps, one list for both fidelities (the merges' groups are the simulator's buckets).
  allreduce_settings(s.overlap, s.bucket_bytes, s.first_bucket_bytes);
  // 0: a bucket per tensor, as the analytical models take it (every tensor its own allreduce as its gradient is ready).
  require(s.bucket_bytes >= 0 && s.first_bucket_bytes >= 0, "--bucket-mb and --first-bucket-mb must not be negative");
  require(s.density >= 0 && s.density <= 1, "--density must be in [0, 1]");
  require(s.density == 0 || one_of(s.algorithm, {"arsgd", "bsp", "asp", "ssp"}),
          "--density: Deep Gradient Compression applies to arsgd, bsp, asp and ssp (as distsgd train --compress dgc)");
  require(s.density == 0 || s.algorithm != "arsgd" || s.overlap != "multistep",
          "--density with arsgd exchanges the sparse gradient after backward: --overlap multistep does not apply");
  require(s.powersgd_rank >= 0 && s.powersgd_start >= 0, "--rank and --powersgd-start must not be negative");
  require(s.powersgd_rank == 0 || one_of(s.algorithm, {"arsgd", "diloco"}),
          "--compress powersgd applies to arsgd and diloco (as distsgd train --compress powersgd)");
  require(s.powersgd_rank == 0 || s.density == 0, "--compress is either dgc or powersgd");
  require(s.servers >= 1, "--servers must be at least 1");
  require_word_of<catalog::choices::Sharding>("--sharding", s.sharding);
  require_word_of<catalog::choices::LocalAggregation>("--local-aggregation", s.local_aggregation);
  require(s.local_aggregation == "none" || s.algorithm == "bsp", "--local-aggregation host applies to bsp only");
  require(s.local_aggregation == "none" || s.density == 0,
          "--local-aggregation host sums dense gradients: it does not combine with --compress dgc");
  require(s.staleness >= 0, "--staleness must not be negative");
  require(s.tau >= 1 && s.pi >= 1, "--tau and --pi must be at least 1");
  require_word_of<catalog::choices::AladdinVariant>("--aladdin-variant", s.aladdin_variant);
  require(s.gossip_probability >= 0 && s.gossip_probability <= 1, "--gossip-prob must be in [0, 1]");
  require_word_of<catalog::choices::GossipMode>("--gossip-mode", s.gossip_mode);
  require(s.sgp_overlap == 0 || s.sgp_overlap == 1, "--sgp-overlap must be 0 or 1");
  require(one_of(s.collectives, {"auto", "steps", "flows"}),
          "--collectives must be auto, steps or flows (got '" + s.collectives + "')");
  require_word_of<catalog::choices::SlowMoBase>("--base", s.slowmo_base);
  require(s.slowmo_base == "localsgd" || s.algorithm == "slowmo", "--base sgp applies to slowmo only");
  require(s.slowmo_base == "localsgd" || s.workers >= 2, "--base sgp gossips: simulate 2 or more workers");
  check_outer_settings(outer_loop_settings(s));
  require(s.workers >= 2 || !catalog::peers_only(s.algorithm),
          "--algo " + s.algorithm + " is decentralized: simulate 2 or more workers");
  check(s.heterogeneity, s.workers);
}

DesResult simulate_discrete_events(const ModelProfile& profile, const ClusterDescription& cluster,
                                   const DesSettings& settings) {
  const auto started = std::chrono::steady_clock::now();
  check(settings);
  require(!profile.tensors.empty(), "the profile has no tensors");
  require(profile.batch_size >= 1, "the profile has no batch size");
  DesContext context(profile, cluster, settings);
  const auto workload = make_workload(context);
  DesRecorder recorder(context);
  WorkerLoops loops(context, *workload, [&](int64_t worker, int64_t step) { recorder.iteration_done(worker, step); });
  loops.start();
  context.queue.run();
  auto result = recorder.result(settings.algorithm);
  result.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (context.trace.enabled()) context.trace.write(settings.trace_path);
  return result;
}

}  // namespace distsgd::sim
