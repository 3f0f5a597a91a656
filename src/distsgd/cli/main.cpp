// distsgd: the command-line program. `distsgd train ...` runs a training job; see `distsgd train --help`.
#include "distsgd/core/config.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/log.hpp"
#include "distsgd/data/dataset.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/train/trainer.hpp"

#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>

#include <iostream>
#include <sstream>

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// CLI11 validator for "CxHxW".
std::vector<int64_t> parse_shape(const std::string& text) {
  std::vector<int64_t> dims;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, 'x')) {
    try {
      size_t used = 0;
      dims.push_back(std::stoll(part, &used));
      if (used != part.size()) throw std::invalid_argument(part);
    } catch (const std::exception&) {
      throw distsgd::Error("--synthetic-shape: '" + text + "' is not of the form CxHxW (e.g. 3x32x32)");
    }
  }
  distsgd::require(dims.size() == 3 && dims[0] > 0 && dims[1] > 0 && dims[2] > 0,
                   "--synthetic-shape: '" + text + "' is not of the form CxHxW with positive sizes");
  return dims;
}

void add_train_options(CLI::App& cmd, distsgd::TrainConfig& c, std::string& synthetic_shape) {
  cmd.add_option("--model", c.model,
                 "model: " + joined(distsgd::models::model_names()) + ", or a TorchScript .pt file")
      ->capture_default_str();
  cmd.add_option("--mlp-width", c.mlp_width, "hidden width of mlp")->capture_default_str();
  cmd.add_option("--mlp-layers", c.mlp_hidden_layers, "hidden layers of mlp")->capture_default_str();
  cmd.add_flag("!--no-batch-norm", c.batch_norm, "vgg without BatchNorm (the original vgg11/vgg16)");
  cmd.add_option("--dataset", c.dataset, "dataset: " + joined(distsgd::data::dataset_names()))
      ->capture_default_str();
  cmd.add_option("--data-dir", c.data_dir,
                 "directory of the dataset files (default: /usr/share/datasets/<dataset>)");
  cmd.add_option("--synthetic-shape", synthetic_shape, "synthetic images: CxHxW")->capture_default_str();
  cmd.add_option("--synthetic-classes", c.synthetic_classes, "synthetic: number of classes")->capture_default_str();
  cmd.add_option("--synthetic-train-size", c.synthetic_train_size, "synthetic: training samples")
      ->capture_default_str();
  cmd.add_option("--synthetic-test-size", c.synthetic_test_size, "synthetic: test samples")->capture_default_str();

  cmd.add_option("--batch-size", c.batch_size, "minibatch per worker")->capture_default_str();
  cmd.add_option("--lr", c.lr, "base learning rate")->capture_default_str();
  cmd.add_option("--momentum", c.momentum, "SGD momentum")->capture_default_str();
  cmd.add_option("--weight-decay", c.weight_decay, "L2 weight decay")->capture_default_str();
  cmd.add_option("--lr-scaling", c.lr_scaling, "none, or linear: lr * global batch / 256 (Goyal et al.)")
      ->capture_default_str();
  cmd.add_option("--warmup-epochs", c.warmup_epochs, "linear learning-rate warm-up over this many epochs")
      ->capture_default_str();
  cmd.add_option("--lr-decay-epochs", c.lr_decay_epochs, "epochs at which the learning rate is multiplied by "
                                                         "--lr-decay-factor (e.g. --lr-decay-epochs 30 60)");
  cmd.add_option("--lr-decay-factor", c.lr_decay_factor, "step decay factor")->capture_default_str();

  cmd.add_option("--epochs", c.epochs, "epochs to train")->capture_default_str();
  cmd.add_option("--time-budget", c.time_budget, "stop after this many seconds of wall time (0: no limit)")
      ->capture_default_str();
  cmd.add_option("--target-accuracy", c.target_accuracy,
                 "stop after the first evaluation with at least this test accuracy (0: never)")
      ->capture_default_str();
  cmd.add_option("--max-steps", c.max_steps, "stop after this many iterations (0: no limit)")->capture_default_str();

  cmd.add_option("--seed", c.seed, "seed of weights and data order")->capture_default_str();
  cmd.add_option("--threads", c.threads, "compute threads per process (0: cores / processes)")
      ->capture_default_str();
  cmd.add_option("--prefetch", c.prefetch, "batches prepared ahead by the loader thread (0: none)")
      ->capture_default_str();
  cmd.add_option("--eval-batch-size", c.eval_batch_size, "batch size of evaluation")->capture_default_str();
  cmd.add_option("--progress-seconds", c.progress_seconds, "seconds between progress lines on stderr")
      ->capture_default_str();

  cmd.add_option("--algo", c.algorithm, "algorithm: " + joined(distsgd::algorithm_names()))->capture_default_str();
  cmd.add_option("--workers", c.workers, "worker processes")->capture_default_str();
  cmd.add_option("--servers", c.servers, "parameter-server processes")->capture_default_str();

  cmd.add_option("--out", c.out, "run directory (default: runs/<model>-<dataset>-<time>)");
  cmd.add_flag("--overwrite", c.overwrite, "replace a run already in --out");
  cmd.add_option("--resume", c.resume, "continue the run in this directory from its checkpoint");
  cmd.add_flag("!--no-checkpoint", c.checkpoint_each_epoch, "do not write a checkpoint at each epoch's end");
  cmd.add_option("--checkpoint-every-steps", c.checkpoint_every_steps,
                 "also write a checkpoint every this many steps (0: only at epoch ends)")
      ->capture_default_str();
}

std::string results_line(const nlohmann::json& s) {
  std::ostringstream line;
  line << "result";
  for (const char* key : {"algorithm", "model", "dataset", "workers", "servers", "epochs", "test_accuracy",
                          "test_loss", "samples_per_second", "wall_seconds", "stop_reason", "out"}) {
    line << ' ' << key << '=' << (s[key].is_string() ? s[key].get<std::string>() : s[key].dump());
  }
  return line.str();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"distsgd: distributed SGD algorithms on one engine, compared side by side"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help of every command");

  distsgd::TrainConfig config;
  std::string synthetic_shape = "1x28x28";
  auto* train = app.add_subcommand("train", "train a model; writes config.json, metrics.jsonl, summary.json");
  add_train_options(*train, config, synthetic_shape);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  try {
    if (train->parsed()) {
      config.synthetic_shape = parse_shape(synthetic_shape);
      auto summary = distsgd::train::run_training(config);
      std::cout << results_line(summary) << std::endl;
    }
    return 0;
  } catch (const distsgd::Error& e) {
    std::cerr << "distsgd: error: " << e.what() << std::endl;
  } catch (const c10::Error& e) {
    std::cerr << "distsgd: error: " << e.what_without_backtrace() << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "distsgd: error: " << e.what() << std::endl;
  }
  return 1;
}
