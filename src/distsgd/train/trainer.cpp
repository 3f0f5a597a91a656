#include "distsgd/train/trainer.hpp"

#include "distsgd/algo/algorithm.hpp"
#include "distsgd/algo/ps/shard_server.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/log.hpp"
#include "distsgd/core/threads.hpp"
#include "distsgd/core/timer.hpp"
#include "distsgd/data/dataset.hpp"
#include "distsgd/data/loader.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/train/checkpoint.hpp"
#include "distsgd/train/evaluate.hpp"
#include "distsgd/train/flat_parameters.hpp"
#include "distsgd/train/lr_schedule.hpp"
#include "distsgd/train/run_files.hpp"
#include "distsgd/train/timeline.hpp"

#include <torch/torch.h>

#include <cmath>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <sstream>
#include <thread>

namespace distsgd::train {
namespace {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<int64_t>(seconds + 0.5);
  std::ostringstream out;
  if (s >= 3600) out << s / 3600 << ':' << std::setw(2) << std::setfill('0') << (s / 60) % 60;
  else out << s / 60;
  out << ':' << std::setw(2) << std::setfill('0') << s % 60;
  return out.str();
}

data::DatasetOptions dataset_options(const TrainConfig& c) {
  data::DatasetOptions o;
  o.name = c.dataset;
  o.dir = c.data_dir;
  o.synthetic_shape = c.synthetic_shape;
  o.synthetic_classes = c.synthetic_classes;
  o.synthetic_train_size = c.synthetic_train_size;
  o.synthetic_test_size = c.synthetic_test_size;
  o.seed = c.seed;
  return o;
}

models::ModelOptions model_options(const TrainConfig& c) {
  models::ModelOptions o;
  o.name = c.model;
  o.mlp_width = c.mlp_width;
  o.mlp_hidden_layers = c.mlp_hidden_layers;
  o.batch_norm = c.batch_norm;
  return o;
}

LrSchedule make_schedule(const TrainConfig& c) {
  LrSchedule schedule;
  schedule.base_lr = c.lr;
  schedule.scale = c.lr_scaling == "linear" ? static_cast<double>(c.global_batch()) / 256.0 : 1.0;
  schedule.warmup_epochs = c.warmup_epochs;
  schedule.decay_epochs = c.lr_decay_epochs;
  schedule.decay_factor = c.lr_decay_factor;
  return schedule;
}

std::string role_label(const TrainConfig& c, int64_t rank) {
  return rank < c.workers ? "worker " + std::to_string(rank) : "server " + std::to_string(rank - c.workers);
}

// What every process of a run holds: data, model, flat buffers, and (when distributed) the communicator.
struct Process {
  TrainConfig config;
  int64_t threads = 1;
  data::Dataset dataset;
  std::unique_ptr<models::Model> model;
  std::unique_ptr<FlatParameters> flat;
  std::unique_ptr<Timeline> timeline;
  std::unique_ptr<comm::Communicator> comm;  // declared after timeline: destroyed first (its threads use it)
  int64_t rank = 0;
};

// Gathers every process's trace events through the store; rank 0 writes trace.json.
void publish_trace(Process& p) {
  if (!p.config.trace) return;
  if (!p.comm) {
    write_chrome_trace((std::filesystem::path(p.config.out) / "trace.json").string(), {p.timeline->events()});
    return;
  }
  p.comm->store_set("trace/" + std::to_string(p.rank), p.timeline->events().dump());
  if (p.rank != 0) return;
  std::vector<nlohmann::json> all;
  for (int64_t r = 0; r < p.comm->world_size(); ++r) {
    all.push_back(nlohmann::json::parse(p.comm->store_get("trace/" + std::to_string(r))));
  }
  write_chrome_trace((std::filesystem::path(p.config.out) / "trace.json").string(), all);
}

// Sums values over the workers (identity in a single process).
std::vector<double> sum_over_workers(Process& p, std::vector<double> values) {
  if (!p.comm) return values;
  auto t = torch::tensor(values, torch::kFloat64);
  p.comm->allreduce_sum(t).wait();
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}

// Row w of the result is worker w's `values` (just `values` in a single process).
std::vector<std::vector<double>> gather_from_workers(Process& p, const std::vector<double>& values) {
  const int64_t workers = p.comm ? p.comm->workers() : 1;
  const auto k = static_cast<int64_t>(values.size());
  auto table = torch::zeros({workers, k}, torch::kFloat64);
  table[p.rank].copy_(torch::tensor(values, torch::kFloat64));
  if (p.comm) p.comm->allreduce_sum(table).wait();
  std::vector<std::vector<double>> rows;
  for (int64_t w = 0; w < workers; ++w) {
    rows.emplace_back(table[w].data_ptr<double>(), table[w].data_ptr<double>() + k);
  }
  return rows;
}

class WorkerLoop {
 public:
  WorkerLoop(Process& p, const TrainHooks& hooks) : p_(p), c_(p.config), hooks_(hooks) {}
  nlohmann::json run();

 private:
  Evaluation evaluate_current_parameters();
  Evaluation evaluate_distributed();
  void evaluate_and_record();
  void save_checkpoint_now();
  bool out_of_time();
  void progress_line(int64_t epoch, int64_t step_in_epoch, double loss, double lr);
  nlohmann::json summary();

  Process& p_;
  const TrainConfig& c_;
  const TrainHooks& hooks_;
  std::unique_ptr<algo::WorkerAlgorithm> algorithm_;
  std::unique_ptr<RunFiles> files_;  // rank 0 only
  LrSchedule schedule_;
  TrainingPosition position_;
  int64_t steps_per_epoch_ = 0, step_limit_ = 0;
  Clock::time_point wall_start_ = Clock::now(), last_progress_ = Clock::now();
  double train_seconds_before_ = 0, wall_seconds_before_ = 0;
  int64_t steps_before_ = 0;
  Stopwatch train_time_, data_wait_, forward_, backward_, slowdown_;
  Evaluation last_eval_;
  bool decentralized_ = false;
  bool evaluate_only_at_end_ = false;  // independent workers under a time budget
  Evaluation worker0_eval_;        // decentralized: worker 0's own model
  double parameter_variance_ = 0;  // distributed runs: mean over workers of ||x_i - mean(x)||^2
  double variance_across_workers();
  int64_t last_eval_step_ = -1;
  double time_to_target_ = -1;
  double epoch_loss_sum_ = 0;
  int64_t epoch_loss_count_ = 0;
  std::string stop_reason_ = "epochs";

  double wall_now() const { return wall_seconds_before_ + seconds_since(wall_start_); }
  bool leader() const { return p_.rank == 0; }
  bool single_process() const { return !p_.comm; }
};

// Evaluates the model's current parameters: each worker takes its share of the test set, the sums are allreduced.
Evaluation WorkerLoop::evaluate_current_parameters() {
  auto buffers = p_.model->buffers();
  if (p_.comm && !buffers.empty()) {
    // BatchNorm statistics differ between workers; evaluate with worker 0's, as DDP does.
    for (auto& b : buffers) p_.comm->broadcast(b, 0).wait();
  }
  const auto& test = p_.dataset.test;
  const int64_t workers = c_.workers, n = test.size();
  const int64_t begin = n * p_.rank / workers, end = n * (p_.rank + 1) / workers;
  data::Split part{test.images.narrow(0, begin, end - begin), test.labels.narrow(0, begin, end - begin)};
  Evaluation mine = evaluate(*p_.model, p_.dataset, part, c_.eval_batch_size);
  auto sums = sum_over_workers(p_, {mine.loss * static_cast<double>(mine.samples),
                                    mine.accuracy * static_cast<double>(mine.samples),
                                    static_cast<double>(mine.samples)});
  Evaluation all;
  all.samples = static_cast<int64_t>(sums[2]);
  all.loss = sums[0] / std::max(1.0, sums[2]);
  all.accuracy = sums[1] / std::max(1.0, sums[2]);
  return all;
}

// Mean over workers of ||x_i - mean(x)||^2 for the parameters the workers hold now (0 for synchronous
// algorithms, whose workers agree).
double WorkerLoop::variance_across_workers() {
  torch::NoGradGuard no_grad;
  const auto own = p_.flat->params().detach();
  auto mean = own.clone();
  p_.comm->allreduce_sum(mean).wait();
  mean.div_(static_cast<double>(c_.workers));
  const double squared_distance = (own - mean).pow(2).sum(torch::kFloat64).item<double>();
  return sum_over_workers(p_, {squared_distance})[0] / static_cast<double>(c_.workers);
}

Evaluation WorkerLoop::evaluate_distributed() {
  if (!decentralized_ || !p_.comm) {
    // Measured on the workers' own parameters: for parameter-server algorithms before before_evaluation() puts
    // in x~, for the others after it has completed what was in flight (multistep's allgathers).
    const bool swaps_in_server_model = c_.servers > 0;
    if (p_.comm && swaps_in_server_model) parameter_variance_ = variance_across_workers();
    algorithm_->before_evaluation();
    if (p_.comm && !swaps_in_server_model) parameter_variance_ = variance_across_workers();
    Evaluation e = evaluate_current_parameters();
    algorithm_->after_evaluation();
    return e;
  }
  // Decentralized: the workers' models differ. Evaluate their average, then worker 0's own model, and put
  // every worker's own model back. Only this evaluation stops the workers (their gossip threads keep serving).
  algorithm_->before_evaluation();
  torch::NoGradGuard no_grad;
  auto& params = p_.flat->params();
  const auto own = params.detach().clone();
  auto mean = own.clone();
  p_.comm->allreduce_sum(mean).wait();
  mean.div_(static_cast<double>(c_.workers));
  const double squared_distance = (own - mean).pow(2).sum(torch::kFloat64).item<double>();
  parameter_variance_ = sum_over_workers(p_, {squared_distance})[0] / static_cast<double>(c_.workers);
  params.detach().copy_(mean);
  Evaluation average = evaluate_current_parameters();
  params.detach().copy_(own);
  p_.comm->broadcast(params.detach(), 0).wait();
  worker0_eval_ = evaluate_current_parameters();
  params.detach().copy_(own);
  algorithm_->after_evaluation();
  return average;
}

void WorkerLoop::evaluate_and_record() {
  last_eval_ = evaluate_distributed();
  last_eval_step_ = position_.global_step;
  if (c_.target_accuracy > 0 && last_eval_.accuracy >= c_.target_accuracy && time_to_target_ < 0) {
    time_to_target_ = wall_now();
  }
  // Every worker takes part: the sum is a collective.
  const double bytes_sent = static_cast<double>(algorithm_->stats().bytes_sent);
  const double bytes_per_worker = sum_over_workers(p_, {bytes_sent})[0] / static_cast<double>(c_.workers);
  if (!leader()) return;
  const double epoch = static_cast<double>(position_.global_step) / static_cast<double>(steps_per_epoch_);
  const double train_loss = epoch_loss_count_ > 0 ? epoch_loss_sum_ / static_cast<double>(epoch_loss_count_) : NAN;
  nlohmann::json metrics = {{"epoch", epoch},
                            {"step", position_.global_step},
                            {"wall_seconds", wall_now()},
                            {"train_seconds", position_.train_seconds},
                            {"samples", position_.samples},
                            {"train_loss", train_loss},
                            {"test_loss", last_eval_.loss},
                            {"test_accuracy", last_eval_.accuracy},
                            {"lr", schedule_.at(std::max<int64_t>(0, position_.global_step - 1), steps_per_epoch_)},
                            {"bytes_sent_per_worker", bytes_per_worker}};
  if (p_.comm) metrics["parameter_variance"] = parameter_variance_;
  if (decentralized_) {
    metrics["test_accuracy_worker0"] = worker0_eval_.accuracy;
    metrics["test_loss_worker0"] = worker0_eval_.loss;
  }
  files_->append_metrics(metrics);
  std::ostringstream line;
  line << std::fixed << std::setprecision(4) << "epoch " << epoch << ": test accuracy " << last_eval_.accuracy
       << ", test loss " << last_eval_.loss << ", train loss " << train_loss << " (worker 0)";
  if (decentralized_) {
    line << "; average of the workers' models; worker 0's own: " << worker0_eval_.accuracy
         << ", parameter variance " << std::scientific << std::setprecision(3) << parameter_variance_;
  }
  log::info(line.str());
}

void WorkerLoop::save_checkpoint_now() {
  if (!single_process()) return;  // distributed optimizer state is not checkpointed yet
  position_.wall_seconds = wall_now();
  Checkpoint ckpt;
  ckpt.position = position_;
  ckpt.params = p_.flat->params();
  ckpt.momentum = algorithm_->optimizer_state();
  if (!ckpt.momentum.defined()) ckpt.momentum = torch::zeros({p_.flat->numel()});
  ckpt.buffers = p_.model->buffers();
  ckpt.rng_state = cpu_rng_state();
  ckpt.model = p_.model->name();
  save_checkpoint(checkpoint_path(c_.out), ckpt);
}

// Workers that meet in collectives must stop at the same step, so the time budget is agreed on; independent
// workers stop on their own (an agreement would synchronize them every step).
bool WorkerLoop::out_of_time() {
  if (c_.time_budget <= 0) return false;
  const double mine = wall_now() >= c_.time_budget ? 1.0 : 0.0;
  if (evaluate_only_at_end_) return mine > 0;
  // The agreement is a collective that costs 15-20% of a lenet5 step on 4 processes sharing 2 cores: check every
  // few steps (the same steps on every worker), overshooting the budget by at most that many iterations.
  constexpr int64_t kStepsBetweenAgreements = 8;
  if (position_.global_step % kStepsBetweenAgreements != 0) return false;
  return sum_over_workers(p_, {mine})[0] > 0;
}

void WorkerLoop::progress_line(int64_t epoch, int64_t step_in_epoch, double loss, double lr) {
  if (!leader() || seconds_since(last_progress_) < c_.progress_seconds) return;
  last_progress_ = Clock::now();
  const double this_run_train = position_.train_seconds - train_seconds_before_;
  const double steps_per_second = (position_.global_step - steps_before_) / std::max(1e-9, this_run_train);
  double remaining = (step_limit_ - position_.global_step) / std::max(1e-9, steps_per_second);
  if (c_.time_budget > 0) remaining = std::min(remaining, c_.time_budget - wall_now());
  std::ostringstream line;
  line << "epoch " << epoch + 1 << '/' << c_.epochs << " step " << step_in_epoch << '/' << steps_per_epoch_
       << std::fixed << std::setprecision(4) << " loss " << loss << " lr " << lr << std::setprecision(0) << ' '
       << steps_per_second * static_cast<double>(c_.global_batch()) << " samples/s ETA "
       << format_duration(remaining);
  log::info(line.str());
}

nlohmann::json WorkerLoop::run() {
  const bool resuming = !c_.resume.empty();
  require(!resuming || single_process(), "--resume works for single-process runs only (for now)");
  const auto& info = algo::find_algorithm(c_.algorithm);
  decentralized_ = info.decentralized;
  evaluate_only_at_end_ = info.independent_workers && c_.time_budget > 0;
  const int64_t steps_per_epoch =
      data::ShardedLoader::steps_per_epoch(p_.dataset.train.size(), c_.workers, c_.batch_size);
  algorithm_ = info.make_worker(
      algo::WorkerSetup{c_, p_.comm.get(), *p_.model, *p_.flat, *p_.timeline, steps_per_epoch});
  // Read the checkpoint before touching the run directory, so a bad --resume leaves nothing behind.
  if (resuming) {
    Checkpoint ckpt = load_checkpoint(c_.resume);
    require(ckpt.model == p_.model->name() && ckpt.params.numel() == p_.flat->numel(),
            "--resume: checkpoint in " + c_.resume + " is of model '" + ckpt.model + "' with " +
                std::to_string(ckpt.params.numel()) + " parameters, not '" + p_.model->name() + "' with " +
                std::to_string(p_.flat->numel()));
    auto buffers = p_.model->buffers();
    require(buffers.size() == ckpt.buffers.size(), "--resume: checkpoint buffers do not match the model");
    torch::NoGradGuard no_grad;
    p_.flat->params().copy_(ckpt.params);
    auto momentum = algorithm_->optimizer_state();
    if (momentum.defined()) momentum.copy_(ckpt.momentum);
    for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(ckpt.buffers[i]);
    set_cpu_rng_state(ckpt.rng_state);
    position_ = ckpt.position;
    log::info("resuming from " + c_.resume + " at epoch " + std::to_string(position_.epoch + 1) + ", step " +
              std::to_string(position_.step_in_epoch));
  }
  if (leader()) {
    files_ = std::make_unique<RunFiles>(c_.out, c_.overwrite, resuming);
    auto config_json = to_json(c_);
    config_json["threads_effective"] = p_.threads;
    config_json["parameters"] = p_.flat->numel();
    files_->write_config(config_json);
  }

  data::LoaderOptions loader_options;
  loader_options.rank = p_.rank;
  loader_options.world = c_.workers;
  loader_options.batch_size = c_.batch_size;
  loader_options.seed = c_.seed;
  loader_options.prefetch = c_.prefetch;
  data::ShardedLoader loader(p_.dataset, p_.dataset.train, loader_options);
  steps_per_epoch_ = loader.steps_per_epoch();
  schedule_ = make_schedule(c_);
  step_limit_ = c_.epochs * steps_per_epoch_;
  if (c_.max_steps > 0) step_limit_ = std::min(step_limit_, c_.max_steps);
  train_seconds_before_ = position_.train_seconds;
  wall_seconds_before_ = position_.wall_seconds;
  steps_before_ = position_.global_step;
  const double slowdown = c_.slowdown_of(p_.rank);
  auto& timeline = *p_.timeline;

  if (leader()) {
    log::info("training " + p_.model->name() + " (" + std::to_string(p_.flat->numel()) + " parameters) on " +
              p_.dataset.name + " (" + std::to_string(p_.dataset.train.size()) + " train / " +
              std::to_string(p_.dataset.test.size()) + " test samples) with " + c_.algorithm + ", " +
              std::to_string(c_.workers) + " worker(s) x batch " + std::to_string(c_.batch_size) +
              (c_.servers > 0 ? ", " + std::to_string(c_.servers) + " server(s)" : "") + ", " +
              std::to_string(steps_per_epoch_) + " steps per epoch, " + std::to_string(p_.threads) +
              " thread(s) per process, run directory " + c_.out);
  }

  auto stop_because = [&](const std::string& reason) {
    stop_reason_ = reason;
    return true;
  };
  auto limit_reason = [&] {
    return c_.max_steps > 0 && position_.global_step >= c_.max_steps ? "max_steps" : "epochs";
  };
  bool stop = position_.global_step >= step_limit_ && stop_because(limit_reason());
  for (int64_t epoch = position_.epoch; !stop && epoch < c_.epochs; ++epoch) {
    loader.start_epoch(epoch, position_.step_in_epoch);
    epoch_loss_sum_ = 0;
    epoch_loss_count_ = 0;
    while (true) {
      if (position_.global_step >= step_limit_) {
        stop = stop_because(limit_reason());
        break;
      }
      // Waiting for the other workers to agree on the time-budget stop is training time (a straggler's cost).
      train_time_.start();
      if (out_of_time()) {
        train_time_.stop();
        position_.train_seconds = train_seconds_before_ + train_time_.total();
        stop = stop_because("time_budget");
        break;
      }
      data_wait_.start();
      std::optional<data::Batch> batch;
      {
        Timeline::Scope span(timeline, "data");
        batch = loader.next();
      }
      data_wait_.stop();
      if (!batch) {
        train_time_.stop();
        position_.train_seconds = train_seconds_before_ + train_time_.total();
        break;
      }
      const int64_t step = position_.global_step;
      const double lr = schedule_.at(step, steps_per_epoch_);
      algorithm_->before_forward(step);

      at::Tensor loss;
      const auto compute_start = Clock::now();
      {
        Timeline::Scope span(timeline, "forward");
        forward_.start();
        loss = torch::nn::functional::cross_entropy(p_.model->forward(batch->images), batch->labels);
        forward_.stop();
      }
      {
        algorithm_->before_backward(step);
        Timeline::Scope span(timeline, "backward");
        backward_.start();
        p_.flat->zero_grads();
        loss.backward();
        backward_.stop();
      }
      if (slowdown > 1) {
        // Emulate a slower machine: this worker's compute takes `slowdown` times as long.
        Timeline::Scope span(timeline, "slowdown");
        slowdown_.start();
        std::this_thread::sleep_for(std::chrono::duration<double>((slowdown - 1) * seconds_since(compute_start)));
        slowdown_.stop();
      }
      algorithm_->after_backward(step, lr);
      train_time_.stop();
      position_.train_seconds = train_seconds_before_ + train_time_.total();

      const double loss_value = loss.item<double>();
      require(std::isfinite(loss_value), "training diverged: loss is " + std::to_string(loss_value) +
                                             " at step " + std::to_string(step) + " (try a smaller --lr)");
      epoch_loss_sum_ += loss_value;
      ++epoch_loss_count_;
      if (hooks_.on_step) hooks_.on_step({step, epoch, loss_value, lr});
      ++position_.global_step;
      position_.step_in_epoch = batch->step + 1;
      position_.samples += batch->labels.size(0) * c_.workers;

      if (c_.checkpoint_every_steps > 0 && position_.global_step % c_.checkpoint_every_steps == 0) {
        save_checkpoint_now();
      }
      progress_line(epoch, batch->step + 1, loss_value, lr);
    }
    if (!stop) {
      position_.epoch = epoch + 1;
      position_.step_in_epoch = 0;
      if (evaluate_only_at_end_) continue;
      evaluate_and_record();
      if (c_.checkpoint_each_epoch || c_.checkpoint_every_steps > 0) save_checkpoint_now();
      if (c_.target_accuracy > 0 && last_eval_.accuracy >= c_.target_accuracy) stop = stop_because("target_accuracy");
    }
  }
  algorithm_->end_training();
  // Every worker evaluates here or none does (a collective): independent workers stop at different steps.
  if (evaluate_only_at_end_ || last_eval_step_ != position_.global_step) {
    evaluate_and_record();
    if (c_.checkpoint_each_epoch || c_.checkpoint_every_steps > 0) save_checkpoint_now();
  }
  algorithm_->before_evaluation();
  if (leader()) save_parameters(p_.flat->params(), (std::filesystem::path(c_.out) / "parameters.pt").string());
  algorithm_->after_evaluation();
  algorithm_->finish();
  return summary();
}

nlohmann::json WorkerLoop::summary() {
  const int64_t steps = position_.global_step - steps_before_;
  const auto stats = algorithm_->stats();
  // Every worker's own figures (stragglers show here), and their mean.
  const std::vector<std::string> phases{"data_wait", "forward", "backward", "communication_wait", "update",
                                        "slowdown"};
  // Communication waited for inside forward (forward gates) counts as communication, not as forward.
  const double forward_compute = forward_.total() - stats.communication_wait_in_forward_seconds;
  const double train_seconds_this_run = position_.train_seconds - train_seconds_before_;
  std::vector<double> mine{data_wait_.total(), forward_compute, backward_.total(),
                           stats.communication_wait_seconds, stats.update_seconds, slowdown_.total(),
                           static_cast<double>(stats.bytes_sent), static_cast<double>(steps),
                           train_seconds_this_run};
  constexpr size_t kBytes = 6, kSteps = 7, kTrainSeconds = 8, kAlgorithmValues = 9;
  for (const auto& [name, value] : stats.per_worker_values) mine.push_back(value);
  auto rows = gather_from_workers(p_, mine);
  nlohmann::json per_worker = nlohmann::json::array();
  nlohmann::json mean_per_iteration = nlohmann::json::object();
  for (const auto& phase : phases) mean_per_iteration[phase] = 0.0;
  double mean_bytes = 0;
  // Cluster throughput: the sum of every worker's own rate. Synchronous workers share one rate; independent
  // workers (asynchronous algorithms, a straggler) each contribute what they did in their own time.
  double samples_per_second = 0, total_samples = 0;
  for (size_t w = 0; w < rows.size(); ++w) {
    const double iterations = std::max(1.0, rows[w][kSteps]);
    const double samples = rows[w][kSteps] * static_cast<double>(c_.batch_size);
    const double rate = rows[w][kTrainSeconds] > 0 ? samples / rows[w][kTrainSeconds] : 0.0;
    samples_per_second += rate;
    total_samples += samples;
    nlohmann::json seconds;
    for (size_t k = 0; k < phases.size(); ++k) {
      seconds[phases[k]] = rows[w][k] / iterations;
      mean_per_iteration[phases[k]] =
          mean_per_iteration[phases[k]].get<double>() + rows[w][k] / iterations / static_cast<double>(rows.size());
    }
    nlohmann::json entry = {{"worker", w},
                            {"steps", rows[w][kSteps]},
                            {"samples_per_second", rate},
                            {"seconds_per_iteration", seconds},
                            {"bytes_sent", rows[w][kBytes]}};
    for (size_t k = 0; k < stats.per_worker_values.size(); ++k) {
      entry[stats.per_worker_values[k].first] = rows[w][kAlgorithmValues + k];
    }
    per_worker.push_back(entry);
    mean_bytes += rows[w][kBytes] / static_cast<double>(rows.size());
  }
  nlohmann::json summary = {
      {"test_accuracy", last_eval_.accuracy},
      {"test_loss", last_eval_.loss},
      {"samples_per_second", samples_per_second},
      {"samples_trained", total_samples},  // by all workers in this run
      {"wall_seconds", wall_now()},
      {"train_seconds", position_.train_seconds},
      {"epochs", static_cast<double>(position_.global_step) / static_cast<double>(steps_per_epoch_)},
      {"steps", position_.global_step},
      {"samples", position_.samples},
      {"stop_reason", stop_reason_},
      {"time_to_target_seconds", time_to_target_ >= 0 ? nlohmann::json(time_to_target_) : nlohmann::json()},
      {"model", p_.model->name()},
      {"dataset", p_.dataset.name},
      {"parameters", p_.flat->numel()},
      {"algorithm", c_.algorithm},
      {"workers", c_.workers},
      {"servers", c_.servers},
      {"batch_size", c_.batch_size},
      {"global_batch", c_.global_batch()},
      {"threads", p_.threads},
      {"seconds_per_iteration", mean_per_iteration},
      {"bytes_sent_per_worker", mean_bytes},
      {"per_worker", per_worker},
      {"out", c_.out},
  };
  if (!c_.overlap.empty() && c_.algorithm == "arsgd") summary["overlap"] = c_.overlap;
  if (c_.servers > 0) {
    summary["sharding"] = c_.sharding;
    if (leader()) {
      // Every shard publishes its figures when its last worker is done (after finish() above).
      auto shards = algo::ps::ShardServer::collect(*p_.comm);
      double staleness_sum = 0;
      int64_t staleness_max = 0;
      for (const auto& shard : shards) {
        staleness_sum += shard["staleness_mean"].get<double>();
        staleness_max = std::max(staleness_max, shard["staleness_max"].get<int64_t>());
      }
      summary["staleness_mean"] = staleness_sum / static_cast<double>(shards.size());
      summary["staleness_max"] = staleness_max;
      summary["server_statistics"] = shards;
    }
  }
  if (p_.comm) summary["parameter_variance"] = parameter_variance_;
  if (decentralized_) {
    summary["test_accuracy_worker0"] = worker0_eval_.accuracy;
    summary["test_loss_worker0"] = worker0_eval_.loss;
  }
  publish_trace(p_);
  if (leader()) files_->write_summary(summary);
  return summary;
}

void run_server(Process& p) {
  algo::ServerSetup setup{p.config, *p.comm, p.rank - p.config.workers, *p.flat, *p.timeline};
  auto server = algo::find_algorithm(p.config.algorithm).make_server(setup);
  server->serve();
  publish_trace(p);
}

}  // namespace

std::string default_run_dir(const TrainConfig& c) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  std::ostringstream name;
  name << std::filesystem::path(c.model).stem().string() << '-' << c.dataset << '-'
       << std::put_time(&tm, "%Y%m%d-%H%M%S");
  return (std::filesystem::path("runs") / name.str()).string();
}

nlohmann::json run_training(TrainConfig config, const TrainHooks& hooks) {
  validate(config);
  if (config.out.empty()) {
    // Processes started by distsgd's own launcher share the directory it chose.
    const char* launcher_out = std::getenv("DISTSGD_OUT");
    config.out = launcher_out ? launcher_out : config.resume.empty() ? default_run_dir(config) : config.resume;
  }
  Process p;
  p.config = config;
  const auto env = comm::process_env_from_environment();
  const bool distributed = config.processes() > 1;
  if (distributed) {
    require(env.has_value(), "a run of " + std::to_string(config.processes()) +
                                 " processes must be started by a launcher (distsgd train, mpirun, srun, torchrun)");
    require(env->world_size == config.processes(),
            "the launcher started " + std::to_string(env->world_size) + " processes but --workers " +
                std::to_string(config.workers) + " --servers " + std::to_string(config.servers) + " needs " +
                std::to_string(config.processes()));
    p.rank = env->rank;
    log::set_prefix(env->launcher == "distsgd" ? "" : "[" + role_label(config, p.rank) + "] ");
  }
  p.threads = configure_threads(config.threads, env ? env->local_world_size : 1);

  p.dataset = data::load_dataset(dataset_options(config));
  const models::InputSpec input{p.dataset.channels, p.dataset.height, p.dataset.width, p.dataset.classes};
  torch::manual_seed(static_cast<uint64_t>(config.seed));  // the same initial weights in every process
  p.model = models::make_model(model_options(config), input);
  p.flat = std::make_unique<FlatParameters>(*p.model);
  if (config.test_init_spread > 0 && p.rank < config.workers) {
    // Testing: distinct starting models, so that averaging shows whether it conserves what it must.
    torch::NoGradGuard no_grad;
    p.flat->params().add_(config.test_init_spread * static_cast<double>(p.rank));
  }
  p.timeline = std::make_unique<Timeline>(config.trace, p.rank, role_label(config, p.rank));
  if (distributed) {
    p.comm = std::make_unique<comm::Communicator>(
        *env, config.workers, std::chrono::milliseconds(static_cast<int64_t>(config.timeout * 1000)));
  }
  if (p.rank >= config.workers) {
    run_server(p);
    return {{"role", "server"}};
  }
  WorkerLoop loop(p, hooks);
  return loop.run();
}

}  // namespace distsgd::train
