// Reading finished run directories of `distsgd train` (README, "Training"): summary.json, metrics.jsonl, and the
// steady-state throughput from trace.json, for the commands that compare runs with predictions (validate, advise).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace distsgd::experiment {

// summary.json of a run that finished (it is written last, by worker 0, once every worker is done), or nothing.
std::optional<nlohmann::json> finished_summary(const std::string& run_dir);

// metrics.jsonl: one record per evaluation, in order (test_accuracy, samples, epoch, ...).
std::vector<nlohmann::json> evaluation_records(const std::string& run_dir);

// Throughput once the run is warm. summary.json's samples_per_second is over each worker's whole training time,
// first iterations included (allocations, the first messages, caches); here each worker's iterations from
// `warmup` on are timed from the start of one forward pass to the start of the next (trace.json, written with
// --trace), leaving out the iterations that cross an epoch's end (the evaluation) and those after the first worker
// to stop began its last one (the others then share the host's cores among fewer ranks), and the workers' rates are
// added up as summary.json adds them.
struct SteadyThroughput {
  double samples_per_second = 0;   // all workers
  int64_t warmup_iterations = 0;   // skipped at the start of every worker
  int64_t timed_iterations = 0;    // per worker (the fewest of any worker)
  std::vector<double> per_worker;  // samples/s of each worker
  // Workers with no iteration after their warm-up while every worker trained (a straggler still warming up when
  // the others stopped): timed over their own iterations instead.
  int64_t workers_timed_past_the_others = 0;
};

// The warm-up validate and calibrate --runs leave out by default (--warmup): the first allocations, messages and
// caches are behind a run of lenet5 by then.
inline constexpr int64_t kDefaultWarmupIterations = 20;

// Throws Error naming the file when trace.json is missing or holds too few iterations for `warmup`.
SteadyThroughput steady_throughput(const std::string& run_dir, const nlohmann::json& summary, int64_t warmup);

}  // namespace distsgd::experiment
