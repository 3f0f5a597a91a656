#include "distsgd/train/worker_loop.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/core/log.hpp"
#include "distsgd/core/timed_phase.hpp"
#include "distsgd/core/timeline.hpp"
#include "distsgd/data/loader.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/train/options.hpp"
#include "distsgd/train/progress.hpp"
#include "distsgd/train/resume.hpp"
#include "distsgd/train/run_report.hpp"
#include "distsgd/train/worker_evaluation.hpp"

#include <torch/torch.h>

#include <filesystem>
#include <thread>

namespace distsgd::train {
namespace {

optim::LrSchedule make_schedule(const TrainConfig& c) {
  optim::LrSchedule schedule;
  schedule.base_lr = c.lr;
  schedule.scale = c.lr_scaling == LrScaling::kLinear ? static_cast<double>(c.global_batch()) / 256.0 : 1.0;
  schedule.warmup_epochs = c.warmup_epochs;
  schedule.decay_epochs = c.lr_decay_epochs;
  schedule.decay_factor = c.lr_decay_factor;
  return schedule;
}

class WorkerLoop {
 public:
  WorkerLoop(Process& p, const TrainHooks& hooks) : s_(p, algo::find_algorithm(p.config.algorithm)), hooks_(hooks) {}
  nlohmann::json run();

 private:
  void prepare();
  bool train_one_epoch(data::ShardedLoader& loader, int64_t epoch);  // false: training stops
  bool out_of_time();
  bool stop_because(const std::string& reason) {
    s_.stop_reason = reason;
    return false;
  }
  const char* limit_reason() const {
    return c().max_steps > 0 && s_.position.global_step >= c().max_steps ? "max_steps" : "epochs";
  }
  const TrainConfig& c() const { return s_.c; }
  void checkpoint_after_evaluation() {
    if (c().checkpoint_each_epoch || c().checkpoint_every_steps > 0) save_checkpoint_now(s_);
  }

  WorkerState s_;
  const TrainHooks& hooks_;
  Progress progress_;
};

void WorkerLoop::prepare() {
  Process& p = s_.p;
  require(c().resume.empty() || !p.comm, "--resume works for single-process runs only (for now)");
  s_.evaluate_only_at_end = s_.info.independent_workers && c().time_budget > 0;
  s_.steps_per_epoch = data::ShardedLoader::steps_per_epoch(p.dataset.train.size(), c().workers, c().batch_size);
  s_.algorithm =
      s_.info.make_worker(algo::WorkerSetup{c(), p.comm.get(), *p.model, *p.flat, *p.timeline, s_.steps_per_epoch});
  const bool resuming = !c().resume.empty();
  if (resuming) restore_from_checkpoint(s_);
  if (s_.leader()) {
    s_.files = std::make_unique<RunFiles>(c().out, c().overwrite, resuming);
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

// Workers that meet in collectives must stop at the same step, so the time budget is agreed on; independent
// workers stop on their own (an agreement would synchronize them every step).
bool WorkerLoop::out_of_time() {
  if (c().time_budget <= 0) return false;
  const double mine = s_.wall_now() >= c().time_budget ? 1.0 : 0.0;
  if (s_.evaluate_only_at_end) return mine > 0;
  // The agreement is a collective that costs 15-20% of a lenet5 step on 4 processes sharing 2 cores: check every
  // few steps (the same steps on every worker), overshooting the budget by at most that many iterations.
  constexpr int64_t kStepsBetweenAgreements = 8;
  if (s_.position.global_step % kStepsBetweenAgreements != 0) return false;
  return sum_over_workers(s_.p, {mine})[0] > 0;
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
    // Waiting for the other workers to agree on the time-budget stop is training time (a straggler's cost).
    s_.train_time.start();
    if (out_of_time()) {
      s_.train_time.stop();
      position.train_seconds = s_.train_seconds_before + s_.train_time.total();
      return stop_because("time_budget");
    }
    std::optional<data::Batch> batch;
    {
      TimedPhase phase(timeline, "data", s_.data_wait);
      batch = loader.next();
    }
    if (!batch) {
      s_.train_time.stop();
      position.train_seconds = s_.train_seconds_before + s_.train_time.total();
      return true;  // the epoch is done
    }
    const int64_t step = position.global_step;
    const double lr = s_.schedule.at(step, s_.steps_per_epoch);
    s_.algorithm->before_forward(step);

    at::Tensor loss;
    const auto compute_start = Clock::now();
    {
      TimedPhase phase(timeline, "forward", s_.forward);
      loss = torch::nn::functional::cross_entropy(p.model->forward(batch->images), batch->labels);
    }
    {
      s_.algorithm->before_backward(step);
      TimedPhase phase(timeline, "backward", s_.backward);
      p.flat->zero_grads();
      loss.backward();
    }
    if (slowdown > 1) {
      // Emulate a slower machine: this worker's compute takes `slowdown` times as long.
      TimedPhase phase(timeline, "slowdown", s_.slowdown);
      std::this_thread::sleep_for(std::chrono::duration<double>((slowdown - 1) * seconds_since(compute_start)));
    }
    s_.algorithm->after_backward(step, lr);
    s_.train_time.stop();
    position.train_seconds = s_.train_seconds_before + s_.train_time.total();

    const double loss_value = loss.item<double>();
    require(std::isfinite(loss_value), "training diverged: loss is " + std::to_string(loss_value) + " at step " +
                                           std::to_string(step) + " (try a smaller --lr)");
    s_.epoch_loss_sum += loss_value;
    ++s_.epoch_loss_count;
    if (hooks_.on_step) hooks_.on_step({step, epoch, loss_value, lr});
    ++position.global_step;
    position.step_in_epoch = batch->step + 1;
    position.samples += batch->labels.size(0) * c().workers;

    if (c().checkpoint_every_steps > 0 && position.global_step % c().checkpoint_every_steps == 0) {
      save_checkpoint_now(s_);
    }
    progress_.maybe_print(s_, epoch, batch->step + 1, loss_value, lr);
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

  bool go_on = s_.position.global_step < s_.step_limit || stop_because(limit_reason());
  for (int64_t epoch = s_.position.epoch; go_on && epoch < c().epochs; ++epoch) {
    go_on = train_one_epoch(loader, epoch);
    if (!go_on) break;
    s_.position.epoch = epoch + 1;
    s_.position.step_in_epoch = 0;
    if (s_.evaluate_only_at_end) continue;
    evaluate_and_record(s_);
    checkpoint_after_evaluation();
    if (c().target_accuracy > 0 && s_.last_eval.accuracy >= c().target_accuracy)
      go_on = stop_because("target_accuracy");
  }
  s_.algorithm->end_training();
  // Every worker evaluates here or none does (a collective): independent workers stop at different steps.
  if (s_.evaluate_only_at_end || s_.last_eval_step != s_.position.global_step) {
    evaluate_and_record(s_);
    checkpoint_after_evaluation();
  }
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
