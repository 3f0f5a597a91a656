#include "distsgd/train/worker_loop.hpp"

#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/log.hpp"
#include "distsgd/core/runtime.hpp"
#include "distsgd/core/timed_phase.hpp"
#include "distsgd/core/timeline.hpp"
#include "distsgd/data/loader.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/train/loss.hpp"
#include "distsgd/train/options.hpp"
#include "distsgd/train/progress.hpp"
#include "distsgd/train/resume.hpp"
#include "distsgd/train/run_report.hpp"
#include "distsgd/train/worker_evaluation.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace distsgd::train {
namespace {

optim::LrSchedule make_schedule(const TrainConfig& c) {
  optim::LrSchedule schedule;
  schedule.base_lr = c.lr;
  schedule.scale = c.lr_scaling == LrScaling::kLinear ? static_cast<double>(c.global_batch()) / 256.0 : 1.0;
  schedule.warmup_epochs = c.warmup_epochs;
  schedule.warmup_start_fraction =
      optim::warmup_start_fraction(c.lr_scaling == LrScaling::kLinear, c.global_batch(), c.workers);
  schedule.decay_epochs = c.lr_decay_epochs;
  schedule.decay_factor = c.lr_decay_factor;
  return schedule;
}

class WorkerLoop {
 public:
  WorkerLoop(Process& p, const TrainHooks& hooks)
      : s_(p, algo::find_algorithm(p.config.algorithm)),
        hooks_(hooks),
        liveness_(p.comm ? p.comm->liveness() : nullptr) {}
  nlohmann::json run();

 private:
  void prepare();
  bool train_one_epoch(data::ShardedLoader& loader, int64_t epoch);  // false: training stops
  // A step's training time: its wall time (the run's train_seconds) and the process's CPU beside it.
  void start_train_clocks();
  void stop_train_clocks();
  const char* stop_requested();  // the reason to stop before the next step (time budget, divergence), or null
  bool agreed_divergence_at_epoch_end();
  double sum_after_meeting(double value);
  int64_t steps_between_agreements(double mean_seconds_per_step) const;
  bool stop_because(const std::string& reason) {
    s_.stop_reason = reason;
    return false;
  }
  const char* limit_reason() const {
    return c().max_steps > 0 && s_.position.global_step >= c().max_steps ? "max_steps" : "epochs";
  }
  const TrainConfig& c() const { return s_.c; }
  // Independent workers of a multi-worker run that evaluate mid-epoch: they meet in those evaluations only.
  bool meets_mid_epoch() const {
    return s_.p.comm && s_.info.independent_workers && c().evals_per_epoch > 1 && !s_.evaluate_only_at_end;
  }
  // --evals-per-epoch K: after every ceil(steps_per_epoch / K) steps of an epoch, but its last (the epoch's own
  // evaluation follows it). Every worker counts the same steps, so they all evaluate together.
  bool evaluation_due(int64_t steps_into_epoch) const {
    if (c().evals_per_epoch <= 1 || s_.evaluate_only_at_end || steps_into_epoch >= s_.steps_per_epoch) return false;
    const int64_t k = c().evals_per_epoch;
    const int64_t interval = std::max<int64_t>(1, (s_.steps_per_epoch + k - 1) / k);  // K evaluations, no more
    return steps_into_epoch % interval == 0;
  }
  void checkpoint_after_evaluation() {
    // A diverged model would replace the last good checkpoint.
    if (s_.divergence.here() || s_.stop_reason == "diverged") return;
    // Independent workers stopping at their own deadlines end at different steps: no common checkpoint.
    if (s_.evaluate_only_at_end && s_.p.comm) return;
    if (c().checkpoint_each_epoch || c().checkpoint_every_steps > 0) save_checkpoint_now(s_);
  }

  WorkerState s_;
  const TrainHooks& hooks_;
  comm::Liveness* liveness_;  // told of every step, so that the others' waits for this worker see it train
  Progress progress_;
  int64_t next_agreement_step_ = 0;  // workers that meet in collectives agree on stopping at this step
};

void WorkerLoop::prepare() {
  Process& p = s_.p;
  s_.evaluate_only_at_end = s_.info.independent_workers && c().time_budget > 0;
  s_.steps_per_epoch = data::ShardedLoader::steps_per_epoch(p.dataset.train.size(), c().workers, c().batch_size);
  const bool resuming = !c().resume.empty();
  if (resuming) restore_parameters(s_);  // before the algorithm is made: it may copy them (AD-PSGD)
  s_.algorithm =
      s_.info.make_worker(algo::WorkerSetup{c(), p.comm.get(), *p.model, *p.flat, *p.timeline, s_.steps_per_epoch});
  if (resuming) restore_algorithm_state(s_);
  if (s_.leader()) {
    s_.files = std::make_unique<RunFiles>(c().out, c().overwrite, resuming);
    // Evaluations after the checkpoint were made by the run that stopped; this run makes them again.
    if (resuming) s_.files->drop_metrics_after(s_.position.global_step);
    auto config = config_json(c());
    config["threads_effective"] = p.threads;
    config["parameters"] = p.flat->numel();
    s_.files->write_config(config);
  }
  s_.schedule = make_schedule(c());
  s_.step_limit = c().epochs * s_.steps_per_epoch;
  if (c().max_steps > 0) s_.step_limit = std::min(s_.step_limit, c().max_steps);
  s_.train_seconds_before = s_.position.train_seconds;
  s_.wall_seconds_before = s_.position.wall_seconds;
  s_.steps_before = s_.position.global_step;
  if (s_.leader()) {
    log::info("training " + p.model->name() + " (" + std::to_string(p.flat->numel()) + " parameters) on " +
              p.dataset.name + " (" + std::to_string(p.dataset.train.size()) + " train / " +
              std::to_string(p.dataset.test.size()) + " test samples) with " + c().algorithm + ", " +
              std::to_string(c().workers) + " worker(s) x batch " + std::to_string(c().batch_size) +
              (c().servers > 0 ? ", " + std::to_string(c().servers) + " server(s)" : "") + ", " +
              std::to_string(s_.steps_per_epoch) + " steps per epoch, " + std::to_string(p.threads) +
              " thread(s) per process, run directory " + c().out);
  }
}

// Workers that meet in collectives must stop at the same step, so the time budget and a divergence are agreed on;
// independent workers stop on their own (an agreement would synchronize them), and learn of a divergence elsewhere
// through the store.
const char* WorkerLoop::stop_requested() {
  const bool out_of_time = c().time_budget > 0 && s_.wall_now() >= c().time_budget;
  if (!s_.p.comm || s_.info.independent_workers) {
    // With mid-epoch evaluations (collectives), independent workers stop on a divergence only where they all meet:
    // at the next evaluation (train_one_epoch) or the epoch's end. One that has not polled the store yet would
    // otherwise enter an evaluation the others, stopped, never join.
    if (!meets_mid_epoch() && s_.divergence.here_or_polled()) return "diverged";
    // Independent workers without a time budget have no other reason to stop here.
    return out_of_time && (!s_.p.comm || s_.evaluate_only_at_end) ? "time_budget" : nullptr;
  }
  if (s_.position.global_step < next_agreement_step_) return nullptr;
  const double steps = static_cast<double>(s_.position.global_step - s_.steps_before);
  const double seconds_per_step = steps > 0 ? s_.train_time.total() / steps : 0.0;
  // Worker 0's pace sets the interval: a sum of one value and zeros is that value exactly, on every worker, so
  // every worker computes the same next step.
  const auto sums = sum_over_workers(
      s_.p, {out_of_time ? 1.0 : 0.0, s_.divergence.here() ? 1.0 : 0.0, s_.leader() ? seconds_per_step : 0.0});
  next_agreement_step_ = s_.position.global_step + steps_between_agreements(sums[2]);
  if (sums[1] > 0) return "diverged";
  return sums[0] > 0 ? "time_budget" : nullptr;
}

// The agreement is a collective that costs 15-20% of a lenet5 step on 4 processes sharing 2 cores, and it holds
// the decentralized algorithms' faster workers until the slowest reaches the same step: it comes about once a
// second of worker 0's steps (a divergence stops the run that soon), and under a time budget at least every 8 steps
// (the budget is overshot by at most that many iterations).
int64_t WorkerLoop::steps_between_agreements(double mean_seconds_per_step) const {
  constexpr double kSecondsBetweenAgreements = 1.0;
  constexpr int64_t kMaxSteps = 256, kMaxStepsUnderTimeBudget = 8;
  const int64_t most = c().time_budget > 0 ? kMaxStepsUnderTimeBudget : kMaxSteps;
  if (mean_seconds_per_step <= 0) return 1;  // nothing measured yet
  const double steps = std::floor(kSecondsBetweenAgreements / mean_seconds_per_step);
  return std::clamp<int64_t>(static_cast<int64_t>(std::min(steps, static_cast<double>(most))), 1, most);
}

// Every worker passes here once per epoch end or stop (except independent workers under a time budget, which stop
// at different epochs and meet only at the end): a worker that stopped on a divergence mid-epoch waits here for
// the others, who stop as soon as they learn of it or reach the epoch's end.
bool WorkerLoop::agreed_divergence_at_epoch_end() {
  if (!s_.p.comm) return s_.divergence.here();
  if (s_.evaluate_only_at_end) return false;
  return sum_after_meeting(s_.divergence.here_or_polled() ? 1.0 : 0.0) > 0;
}

// The sum of `value` over the workers. Independent workers reach an epoch's end (or an evaluation) at their own pace,
// a straggler maybe far behind: they first meet through the store, a wait that lasts while anyone still trains, as
// the collective's own wait (bounded by the timeout) would not.
double WorkerLoop::sum_after_meeting(double value) {
  if (s_.p.comm && s_.info.independent_workers) s_.p.comm->meet();
  return sum_over_workers(s_.p, {value})[0];
}

void WorkerLoop::start_train_clocks() {
  s_.train_time.start();
  s_.train_cpu.start();
}

void WorkerLoop::stop_train_clocks() {
  s_.train_time.stop();
  s_.train_cpu.stop();
  s_.position.train_seconds = s_.train_seconds_before + s_.train_time.total();
}

bool WorkerLoop::train_one_epoch(data::ShardedLoader& loader, int64_t epoch) {
  Process& p = s_.p;
  auto& position = s_.position;
  auto& timeline = *p.timeline;
  const double slowdown = c().slowdown_of(p.rank);
  loader.start_epoch(epoch, position.step_in_epoch);
  s_.epoch_loss_sum = 0;
  s_.epoch_loss_count = 0;
  while (true) {
    if (position.global_step >= s_.step_limit) return stop_because(limit_reason());
    // Waiting for the other workers to agree on the stop is training time (a straggler's cost).
    start_train_clocks();
    if (const char* reason = stop_requested()) {
      stop_train_clocks();
      return stop_because(reason);
    }
    std::optional<data::Batch> batch;
    {
      TimedPhase phase(timeline, "data", s_.data_wait);
      batch = loader.next();
      runtime::spend_compute(p.virtual_data_seconds);
    }
    if (!batch) {
      stop_train_clocks();
      return true;  // the epoch is done
    }
    const int64_t step = position.global_step;
    const double lr = s_.schedule.at(step, s_.steps_per_epoch);
    s_.algorithm->before_forward(step);

    at::Tensor loss;
    const auto compute_start = Clock::now();
    {
      TimedPhase phase(timeline, "forward", s_.forward);
      loss = prediction_loss(p.model->forward(batch->images), batch->labels);
      runtime::spend_compute(p.virtual_forward_seconds);
    }
    {
      s_.algorithm->before_backward(step, lr);
      TimedPhase phase(timeline, "backward", s_.backward);
      p.flat->begin_backward();
      loss.backward();
      p.flat->end_backward();
    }
    if (slowdown > 1) {
      // Emulate a slower machine: this worker's compute takes `slowdown` times as long.
      TimedPhase phase(timeline, "slowdown", s_.slowdown);
      runtime::sleep_for((slowdown - 1) * seconds_since(compute_start));
    }
    s_.algorithm->after_backward(step, lr);
    if (p.virtual_update_seconds > 0) {
      // The optimizer pass the algorithm just made (or will make before the next forward), on the virtual clock
      // here rather than inside the algorithm, where it may hold a lock another actor of the run waits for.
      Timeline::Scope span(timeline, "update");
      runtime::spend_compute(p.virtual_update_seconds);
    }
    stop_train_clocks();

    const double loss_value = loss.item<double>();
    s_.divergence.observe(step, loss_value);
    s_.epoch_loss_sum += loss_value;
    ++s_.epoch_loss_count;
    if (hooks_.on_step) hooks_.on_step({step, epoch, loss_value, lr});
    ++position.global_step;
    if (position.global_step - s_.steps_before == WorkerState::kCpuWarmupIterations) {
      s_.process_cpu_at_warmup = s_.train_cpu.total();
      s_.thread_cpu_at_warmup = s_.train_cpu.thread_total();
    }
    if (liveness_) liveness_->note_progress();
    position.step_in_epoch = batch->step + 1;
    position.samples += batch->labels.size(0) * worker_count(p);

    if (c().checkpoint_every_steps > 0 && position.global_step % c().checkpoint_every_steps == 0 &&
        !s_.divergence.here()) {
      save_checkpoint_now(s_);
    }
    if (s_.leader()) poll_checkpoint(s_);
    progress_.maybe_print(s_, epoch, batch->step + 1, loss_value, lr);
    if (evaluation_due(position.step_in_epoch)) {
      // Independent workers agree here whether any diverged (see stop_requested): all stop, or all evaluate.
      if (meets_mid_epoch() && sum_after_meeting(s_.divergence.here_or_polled() ? 1.0 : 0.0) > 0) {
        return stop_because("diverged");
      }
      evaluate_and_record(s_);
      if (const char* reason = target_reached(c(), s_.last_eval)) return stop_because(reason);
    }
  }
}

nlohmann::json WorkerLoop::run() {
  prepare();
  Process& p = s_.p;
  data::LoaderOptions loader_options;
  loader_options.rank = p.rank;
  loader_options.world = c().workers;
  loader_options.batch_size = c().batch_size;
  loader_options.seed = c().seed;
  loader_options.prefetch = c().prefetch;
  data::ShardedLoader loader(p.dataset, p.dataset.train, loader_options);
  if (p.virtual_start_seconds > 0) runtime::sleep_for(p.virtual_start_seconds);  // before the training clocks

  bool go_on = s_.position.global_step < s_.step_limit || stop_because(limit_reason());
  bool agreement_owed = false;  // this worker stopped inside an epoch and has not met the others' epoch-end agreement
  for (int64_t epoch = s_.position.epoch; go_on && epoch < c().epochs; ++epoch) {
    go_on = train_one_epoch(loader, epoch);
    if (!go_on) {
      agreement_owed = true;
      break;
    }
    if (agreed_divergence_at_epoch_end()) {
      stop_because("diverged");
      break;
    }
    s_.position.epoch = epoch + 1;
    s_.position.step_in_epoch = 0;
    if (s_.evaluate_only_at_end) continue;
    evaluate_and_record(s_);
    checkpoint_after_evaluation();
    if (const char* reason = target_reached(c(), s_.last_eval)) go_on = stop_because(reason);
  }
  s_.algorithm->end_training();
  // After end_training(), which lets the others go on without this worker (an SSP worker retires its clock, so no
  // pull waits for it) until they reach the agreement too.
  if (agreement_owed && agreed_divergence_at_epoch_end()) stop_because("diverged");
  // Every worker evaluates here or none does (a collective). Independent workers that learned of a divergence stop
  // at different steps, so whether the last evaluation is stale is agreed: a worker that had just evaluated when it
  // stopped must not skip the evaluation the others run (its next collective would meet theirs).
  bool evaluate_now = s_.evaluate_only_at_end || s_.last_eval_step != s_.position.global_step;
  if (s_.p.comm && s_.info.independent_workers && !s_.evaluate_only_at_end) {
    evaluate_now = sum_after_meeting(evaluate_now ? 1.0 : 0.0) > 0;
  }
  if (evaluate_now) {
    evaluate_and_record(s_);
    checkpoint_after_evaluation();
  }
  finish_checkpoints(s_);
  s_.algorithm->before_evaluation();
  if (s_.leader()) save_parameters(p.flat->params(), (std::filesystem::path(c().out) / "parameters.pt").string());
  s_.algorithm->after_evaluation();
  s_.algorithm->finish();
  return report_run(s_);
}

}  // namespace

nlohmann::json run_worker(Process& p, const TrainHooks& hooks) {
  WorkerLoop loop(p, hooks);
  return loop.run();
}

}  // namespace distsgd::train
