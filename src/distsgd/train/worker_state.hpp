// What the jobs of a worker share while it trains: its process, its algorithm, where training stands, the
// phase clocks, the last evaluation. The worker loop (worker_loop.cpp) owns it; evaluation, checkpoints and the run
// report read and extend it.
#pragma once
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/core/timer.hpp"
#include "distsgd/optim/lr_schedule.hpp"
#include "distsgd/train/checkpoint.hpp"
#include "distsgd/train/checkpoint_files.hpp"
#include "distsgd/train/divergence.hpp"
#include "distsgd/train/evaluate.hpp"
#include "distsgd/train/process.hpp"
#include "distsgd/train/run_files.hpp"

#include <memory>
#include <string>

namespace distsgd::train {

struct WorkerState {
  WorkerState(Process& process, const algo::AlgorithmInfo& algorithm_info)
      : p(process), c(process.config), info(algorithm_info), divergence(process, process.config.divergence_factor) {}

  Process& p;
  const TrainConfig& c;
  const algo::AlgorithmInfo& info;
  std::unique_ptr<algo::WorkerAlgorithm> algorithm;
  std::unique_ptr<RunFiles> files;  // worker 0 only
  optim::LrSchedule schedule;
  TrainingPosition position;
  int64_t steps_per_epoch = 1, step_limit = 0;

  // This run's start; a resumed run adds to the totals of the position it resumed from.
  Clock::time_point wall_start = Clock::now();
  double train_seconds_before = 0, wall_seconds_before = 0;
  int64_t steps_before = 0;

  Stopwatch train_time, data_wait, forward, backward, slowdown;
  CpuStopwatch train_cpu;  // the process's CPU over train_time's intervals (summary: cpu_seconds_per_iteration)
  // train_cpu's totals once this run's first kCpuWarmupIterations were done (negative until then): their lazy
  // initialisation (a first forward of ~0.2 s of CPU for lenet5) weighs on a short run's CPU per iteration, so the
  // summary's cpu_after_warmup counts from here.
  static constexpr int64_t kCpuWarmupIterations = 5;
  double process_cpu_at_warmup = -1, thread_cpu_at_warmup = -1;
  double epoch_loss_sum = 0;
  int64_t epoch_loss_count = 0;

  Evaluation last_eval;
  Evaluation worker0_eval;           // decentralized: worker 0's own model
  double parameter_variance = 0;     // distributed runs: mean over workers of ||x_i - mean(x)||^2
  double average_parameter_sum = 0;  // decentralized: sum of the entries of the evaluated average model
  int64_t last_eval_step = -1;
  double time_to_target = -1;
  bool evaluate_only_at_end = false;  // independent workers under a time budget
  std::string stop_reason = "epochs";
  DivergenceWatch divergence;

  // Checkpoints (resume.cpp): the file being resumed from, until restored; the last id this worker wrote; worker 0's
  // checkpoint waiting for the others' files, where it was taken, and how many processes are known to have written.
  std::unique_ptr<RankFile> resumed;
  int64_t last_checkpoint_id = -1;
  int64_t pending_checkpoint = -1;
  TrainingPosition pending_position;
  int64_t pending_written = 0;
  bool checkpoints_stopped = false;  // a worker was lost: no checkpoint can be complete any more

  // Wall time of the run so far; in a virtual run without the time spent evaluating (the spec: an evaluation costs
  // no virtual time; its collectives and pulls would otherwise take time on the simulated network).
  double wall_now() const {
    return wall_seconds_before + seconds_since(wall_start) - (c.virtual_cluster ? evaluation_time.total() : 0.0);
  }
  Stopwatch evaluation_time;
  bool leader() const { return p.leader(); }
};

}  // namespace distsgd::train
