#include "distsgd/train/trainer.hpp"

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
#include "distsgd/train/sgd.hpp"

#include <torch/torch.h>

#include <cmath>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <sstream>

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

// Time spent per phase of an iteration, summed over this run's steps.
struct PhaseTimes {
  Stopwatch data_wait, forward, backward, update;
  nlohmann::json per_iteration(int64_t steps) const {
    const double n = std::max<int64_t>(1, steps);
    return {{"data_wait", data_wait.total() / n},
            {"forward", forward.total() / n},
            {"backward", backward.total() / n},
            {"communication_wait", 0.0},
            {"update", update.total() / n}};
  }
};

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
  if (config.out.empty()) config.out = config.resume.empty() ? default_run_dir(config) : config.resume;
  const auto wall_start = Clock::now();
  const int64_t threads = configure_threads(config.threads);

  const data::Dataset dataset = data::load_dataset(dataset_options(config));
  const models::InputSpec input{dataset.channels, dataset.height, dataset.width, dataset.classes};
  torch::manual_seed(config.seed);  // same initial weights for the same seed, on every worker
  auto model = models::make_model(model_options(config), input);
  FlatParameters flat(*model);
  MomentumSgd optimizer(flat.numel(), config.momentum, config.weight_decay);

  // Read the checkpoint before touching the run directory, so a bad --resume leaves nothing behind.
  const bool resuming = !config.resume.empty();
  TrainingPosition position;
  if (resuming) {
    Checkpoint ckpt = load_checkpoint(config.resume);
    require(ckpt.model == model->name() && ckpt.params.numel() == flat.numel(),
            "--resume: checkpoint in " + config.resume + " is of model '" + ckpt.model + "' with " +
                std::to_string(ckpt.params.numel()) + " parameters, not '" + model->name() + "' with " +
                std::to_string(flat.numel()));
    auto buffers = model->buffers();
    require(buffers.size() == ckpt.buffers.size(), "--resume: checkpoint buffers do not match the model");
    torch::NoGradGuard no_grad;
    flat.params().copy_(ckpt.params);
    optimizer.momentum_buffer().copy_(ckpt.momentum);
    for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(ckpt.buffers[i]);
    set_cpu_rng_state(ckpt.rng_state);
    position = ckpt.position;
    log::info("resuming from " + config.resume + " at epoch " + std::to_string(position.epoch + 1) + ", step " +
              std::to_string(position.step_in_epoch));
  }

  RunFiles files(config.out, config.overwrite, resuming);
  auto config_json = to_json(config);
  config_json["threads_effective"] = threads;
  config_json["parameters"] = flat.numel();
  files.write_config(config_json);

  data::LoaderOptions loader_options;
  loader_options.batch_size = config.batch_size;
  loader_options.seed = config.seed;
  loader_options.prefetch = config.prefetch;
  data::ShardedLoader loader(dataset, dataset.train, loader_options);
  const int64_t steps_per_epoch = loader.steps_per_epoch();

  LrSchedule schedule;
  schedule.base_lr = config.lr;
  schedule.scale = config.lr_scaling == "linear" ? static_cast<double>(config.global_batch()) / 256.0 : 1.0;
  schedule.warmup_epochs = config.warmup_epochs;
  schedule.decay_epochs = config.lr_decay_epochs;
  schedule.decay_factor = config.lr_decay_factor;

  int64_t step_limit = config.epochs * steps_per_epoch;
  if (config.max_steps > 0) step_limit = std::min(step_limit, config.max_steps);

  log::info("training " + model->name() + " (" + std::to_string(flat.numel()) + " parameters) on " +
            dataset.name + " (" + std::to_string(dataset.train.size()) + " train / " +
            std::to_string(dataset.test.size()) + " test samples), batch " + std::to_string(config.batch_size) +
            ", " + std::to_string(steps_per_epoch) + " steps per epoch, " + std::to_string(threads) +
            " thread(s), run directory " + config.out);

  auto save = [&](const TrainingPosition& at) {
    Checkpoint ckpt;
    ckpt.position = at;
    ckpt.params = flat.params();
    ckpt.momentum = optimizer.momentum_buffer();
    ckpt.buffers = model->buffers();
    ckpt.rng_state = cpu_rng_state();
    ckpt.model = model->name();
    save_checkpoint(checkpoint_path(config.out), ckpt);
  };

  PhaseTimes phases;
  Stopwatch train_time;
  const double train_seconds_before = position.train_seconds;
  const double wall_seconds_before = position.wall_seconds;
  const int64_t steps_before = position.global_step;
  auto wall_now = [&] { return wall_seconds_before + seconds_since(wall_start); };
  std::string stop_reason = "epochs";
  Evaluation last_eval;
  int64_t last_eval_step = -1;
  double time_to_target = -1;
  double epoch_loss_sum = 0;
  int64_t epoch_loss_count = 0;
  auto last_progress = Clock::now();

  auto run_evaluation = [&] {
    last_eval = evaluate(*model, dataset, dataset.test, config.eval_batch_size);
    last_eval_step = position.global_step;
    nlohmann::json record = {
        {"epoch", static_cast<double>(position.global_step) / static_cast<double>(steps_per_epoch)},
        {"step", position.global_step},
        {"wall_seconds", wall_now()},
        {"train_seconds", position.train_seconds},
        {"samples", position.samples},
        {"train_loss", epoch_loss_count > 0 ? epoch_loss_sum / static_cast<double>(epoch_loss_count) : NAN},
        {"test_loss", last_eval.loss},
        {"test_accuracy", last_eval.accuracy},
        {"lr", schedule.at(std::max<int64_t>(0, position.global_step - 1), steps_per_epoch)}};
    files.append_metrics(record);
    std::ostringstream line;
    line << std::fixed << std::setprecision(4) << "epoch " << record["epoch"].get<double>() << ": test accuracy "
         << last_eval.accuracy << ", test loss " << last_eval.loss << ", train loss "
         << record["train_loss"].get<double>();
    log::info(line.str());
    if (config.target_accuracy > 0 && last_eval.accuracy >= config.target_accuracy && time_to_target < 0) {
      time_to_target = wall_now();
    }
  };

  bool stop = position.global_step >= step_limit;
  if (stop) stop_reason = config.max_steps > 0 && position.global_step >= config.max_steps ? "max_steps" : "epochs";
  for (int64_t epoch = position.epoch; !stop && epoch < config.epochs; ++epoch) {
    loader.start_epoch(epoch, position.step_in_epoch);
    epoch_loss_sum = 0;
    epoch_loss_count = 0;
    while (true) {
      if (position.global_step >= step_limit) {
        stop = true;
        stop_reason = config.max_steps > 0 && position.global_step >= config.max_steps ? "max_steps" : "epochs";
        break;
      }
      if (config.time_budget > 0 && wall_now() >= config.time_budget) {
        stop = true;
        stop_reason = "time_budget";
        break;
      }
      train_time.start();
      phases.data_wait.start();
      auto batch = loader.next();
      phases.data_wait.stop();
      if (!batch) {
        train_time.stop();
        position.train_seconds = train_seconds_before + train_time.total();
        break;
      }
      const double lr = schedule.at(position.global_step, steps_per_epoch);

      phases.forward.start();
      auto logits = model->forward(batch->images);
      auto loss = torch::nn::functional::cross_entropy(logits, batch->labels);
      phases.forward.stop();

      phases.backward.start();
      flat.zero_grads();
      loss.backward();
      phases.backward.stop();

      phases.update.start();
      optimizer.step(flat.params(), flat.grads(), lr);
      phases.update.stop();
      train_time.stop();
      position.train_seconds = train_seconds_before + train_time.total();

      const double loss_value = loss.item<double>();
      require(std::isfinite(loss_value), "training diverged: loss is " + std::to_string(loss_value) +
                                             " at step " + std::to_string(position.global_step) +
                                             " (try a smaller --lr)");
      epoch_loss_sum += loss_value;
      ++epoch_loss_count;
      if (hooks.on_step) hooks.on_step({position.global_step, epoch, loss_value, lr});
      ++position.global_step;
      position.step_in_epoch = batch->step + 1;
      position.samples += batch->labels.size(0);

      if (config.checkpoint_every_steps > 0 && position.global_step % config.checkpoint_every_steps == 0) {
        position.wall_seconds = wall_now();
        save(position);
      }
      if (seconds_since(last_progress) >= config.progress_seconds) {
        last_progress = Clock::now();
        const double this_run_train = position.train_seconds - train_seconds_before;
        const double steps_per_second = (position.global_step - steps_before) / std::max(1e-9, this_run_train);
        double remaining = (step_limit - position.global_step) / std::max(1e-9, steps_per_second);
        if (config.time_budget > 0) remaining = std::min(remaining, config.time_budget - wall_now());
        std::ostringstream line;
        line << "epoch " << epoch + 1 << '/' << config.epochs << " step " << batch->step + 1 << '/'
             << steps_per_epoch << std::fixed << std::setprecision(4) << " loss " << loss_value << " lr " << lr
             << std::setprecision(0) << ' ' << steps_per_second * config.batch_size << " samples/s ETA "
             << format_duration(remaining);
        log::info(line.str());
      }
    }
    if (!stop) {
      position.epoch = epoch + 1;
      position.step_in_epoch = 0;
      run_evaluation();
      position.wall_seconds = wall_now();
      if (config.checkpoint_each_epoch || config.checkpoint_every_steps > 0) save(position);
      if (config.target_accuracy > 0 && last_eval.accuracy >= config.target_accuracy) {
        stop = true;
        stop_reason = "target_accuracy";
      }
    }
  }
  if (last_eval_step != position.global_step) {
    run_evaluation();
    position.wall_seconds = wall_now();
    if (config.checkpoint_each_epoch || config.checkpoint_every_steps > 0) save(position);
  }

  const int64_t steps_this_run = position.global_step - steps_before;
  const double train_seconds_this_run = position.train_seconds - train_seconds_before;
  nlohmann::json summary = {
      {"test_accuracy", last_eval.accuracy},
      {"test_loss", last_eval.loss},
      {"samples_per_second",
       train_seconds_this_run > 0 ? steps_this_run * config.batch_size / train_seconds_this_run : 0.0},
      {"wall_seconds", wall_now()},
      {"train_seconds", position.train_seconds},
      {"epochs", static_cast<double>(position.global_step) / static_cast<double>(steps_per_epoch)},
      {"steps", position.global_step},
      {"samples", position.samples},
      {"stop_reason", stop_reason},
      {"time_to_target_seconds", time_to_target >= 0 ? nlohmann::json(time_to_target) : nlohmann::json()},
      {"model", model->name()},
      {"dataset", dataset.name},
      {"parameters", flat.numel()},
      {"algorithm", config.algorithm},
      {"workers", config.workers},
      {"servers", config.servers},
      {"batch_size", config.batch_size},
      {"global_batch", config.global_batch()},
      {"threads", threads},
      {"seconds_per_iteration", phases.per_iteration(steps_this_run)},
      {"bytes_sent_per_worker", 0},
      {"out", config.out},
  };
  files.write_summary(summary);
  return summary;
}

}  // namespace distsgd::train
