// distsgd: the command-line program. `distsgd train ...` runs a training job; see `distsgd train --help`.
// `distsgd commbench ...` measures the communication primitives; see `distsgd commbench --help`.
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/cli/commbench.hpp"
#include "distsgd/comm/process_env.hpp"
#include "distsgd/comm/self_launch.hpp"
#include "distsgd/core/config.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"
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

// "RANK:FACTOR" -> (rank, factor).
std::pair<int64_t, double> parse_slowdown(const std::string& text) {
  const auto colon = text.find(':');
  try {
    if (colon != std::string::npos) {
      size_t used_rank = 0, used_factor = 0;
      const int64_t rank = std::stoll(text.substr(0, colon), &used_rank);
      const double factor = std::stod(text.substr(colon + 1), &used_factor);
      if (used_rank == colon && used_factor == text.size() - colon - 1) return {rank, factor};
    }
  } catch (const std::exception&) {
  }
  throw distsgd::Error("--slowdown: '" + text + "' is not of the form RANK:FACTOR (e.g. 3:10)");
}

struct TextOptions {
  std::string synthetic_shape = "1x28x28";
  std::vector<std::string> slowdowns;
};

void add_train_options(CLI::App& cmd, distsgd::TrainConfig& c, TextOptions& text) {
  std::string& synthetic_shape = text.synthetic_shape;
  cmd.add_option("--model", c.model,
                 "model: " + distsgd::join(distsgd::models::model_names()) + ", or a TorchScript .pt file")
      ->capture_default_str();
  cmd.add_option("--mlp-width", c.mlp_width, "hidden width of mlp")->capture_default_str();
  cmd.add_option("--mlp-layers", c.mlp_hidden_layers, "hidden layers of mlp")->capture_default_str();
  cmd.add_flag("!--no-batch-norm", c.batch_norm, "vgg without BatchNorm (the original vgg11/vgg16)");
  cmd.add_option("--dataset", c.dataset, "dataset: " + distsgd::join(distsgd::data::dataset_names()))
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
  const auto independent = distsgd::algo::algorithm_names_where([](const auto& a) { return a.independent_workers; });
  cmd.add_option("--time-budget", c.time_budget,
                 "stop after this many seconds of wall time (0: no limit); " + distsgd::join(independent) +
                     ": each worker stops on its own and the run evaluates only at the end")
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

  std::string algos;
  for (const auto& a : distsgd::algo::builtin_algorithms()) algos += "\n    " + a.name + ": " + a.description;
  cmd.add_option("--algo", c.algorithm, "algorithm:" + algos)->capture_default_str();
  cmd.add_option("--workers", c.workers, "worker processes")->capture_default_str();
  cmd.add_option("--servers", c.servers, "parameter-server processes (ranks after the workers)")
      ->capture_default_str();
  cmd.add_option("--timeout", c.timeout, "seconds any communication may take before the run fails")
      ->capture_default_str();
  cmd.add_option("--overlap", c.overlap,
                 "AR-SGD: none (one allreduce after backward), wfbp (bucketed allreduce during backward), "
                 "multistep (reduce-scatter during backward, sliced update, allgather during next forward)")
      ->capture_default_str();
  cmd.add_option("--bucket-mb", c.bucket_mb, "AR-SGD: gradient bucket size")->capture_default_str();
  cmd.add_option("--first-bucket-mb", c.first_bucket_mb, "AR-SGD: size of the first (last layers') bucket")
      ->capture_default_str();
  cmd.add_option("--sharding", c.sharding,
                 "parameter server: memory (equal contiguous ranges) or layer (whole tensors)")
      ->capture_default_str();
  cmd.add_option("--slowdown", text.slowdowns,
                 "RANK:FACTOR: worker RANK takes FACTOR times its compute time (repeatable)");
  const auto placeable =
      distsgd::algo::algorithm_names_where([](const auto& a) { return !a.momentum_placements.empty(); });
  cmd.add_option("--momentum-at", c.momentum_at,
                 distsgd::join(placeable) + ": where momentum lives: worker, server, both (ALADDIN: local steps and "
                     "global updates), or auto (ASP/SSP: server, ALADDIN: worker)")
      ->capture_default_str();
  cmd.add_option("--staleness", c.staleness, "SSP: staleness bound s (pull every s+1 iterations)")
      ->capture_default_str();
  cmd.add_option("--tau", c.tau, "EASGD: iterations between elastic exchanges")->capture_default_str();
  cmd.add_option("--moving-rate", c.moving_rate, "EASGD: moving rate alpha (0: 0.9 / workers)")
      ->capture_default_str();
  cmd.add_option("--pi", c.pi, "ALADDIN: gradients of one worker that trigger a global update")
      ->capture_default_str();
  cmd.add_option("--aladdin-alpha", c.aladdin_alpha,
                 "ALADDIN mixing weight: text (1 - 1/sqrt(n*pi)) or count (1 - 1/sqrt(gradients accumulated))")
      ->capture_default_str();
  cmd.add_option("--aladdin-variant", c.aladdin_variant,
                 "ALADDIN: full, l1 (local self-update only), l2 (mixing, PS applies each gradient at once)")
      ->capture_default_str();
  cmd.add_option("--compress", c.compress,
                 "gradient uplink compression of bsp, asp, ssp, arsgd: none, or dgc (Deep Gradient Compression: "
                 "top --density of each tensor with momentum correction, factor masking, clipping, warm-up)")
      ->capture_default_str();
  cmd.add_option("--density", c.density, "DGC: fraction of each tensor's entries sent per step after the warm-up")
      ->capture_default_str();
  cmd.add_option("--dgc-clip-norm", c.dgc_clip_norm,
                 "DGC: clip the gradient norm at this threshold / sqrt(workers) before accumulating (0: no clipping)")
      ->capture_default_str();
  cmd.add_option("--dgc-warmup-epochs", c.dgc_warmup_epochs,
                 "DGC: epochs over which the density falls 25%, 6.25%, 1.5625%, 0.4%, then --density")
      ->capture_default_str();
  cmd.add_option("--gossip-prob", c.gossip_prob, "GoSGD: probability of a push after each iteration")
      ->capture_default_str();
  cmd.add_option("--gossip-mode", c.gossip_mode,
                 "gossip: pull (average with a random peer's model) or push (push-sum to a random peer)")
      ->capture_default_str();
  cmd.add_option("--sgp-overlap", c.sgp_overlap,
                 "SGP: 0 waits for each iteration's message, 1 lets it arrive one iteration late")
      ->capture_default_str();
  // Testing only: not in --help.
  cmd.add_option("--test-init-spread", c.test_init_spread, "")->group("");
  cmd.add_option("--test-delay-ms", c.test_delay_ms, "")->group("");
  cmd.add_flag("--trace", c.trace, "write trace.json (Chrome trace format: chrome://tracing, Perfetto)");

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

void add_commbench_options(CLI::App& cmd, distsgd::cli::CommbenchConfig& c) {
  cmd.add_option("--processes", c.processes, "processes to start on this host (at least 2)")->capture_default_str();
  cmd.add_option("--min-kb", c.min_kb, "smallest message, KiB (sizes grow x4 from here)")->capture_default_str();
  cmd.add_option("--max-mb", c.max_mb, "largest message, MiB")->capture_default_str();
  cmd.add_option("--repeats", c.repeats,
                 "timed repeats per size up to 1 MiB; above, repeats * 1 MiB / size (at least 5)")
      ->capture_default_str();
  cmd.add_option("--timeout", c.timeout, "seconds any one operation may take before the run fails")
      ->capture_default_str();
  cmd.add_flag("!--no-send-recv", c.send_recv, "skip the rank 0 <-> rank 1 send/recv ping-pong");
  cmd.add_option("--out", c.out, "JSON file for the sizes, min and median times and the fits (written by rank 0)");
}

// Without an external launcher, `distsgd train --workers W --servers S` starts W+S copies of itself on this
// host, hosts their rendezvous store, and supervises them.
int launch_processes(distsgd::TrainConfig& config, int argc, char** argv) {
  distsgd::validate(config);
  if (config.out.empty()) config.out = distsgd::train::default_run_dir(config);
  std::vector<std::string> labels;
  for (int64_t r = 0; r < config.processes(); ++r) {
    labels.push_back(r < config.workers ? "worker " + std::to_string(r)
                                        : "server " + std::to_string(r - config.workers));
  }
  distsgd::log::info("launching " + std::to_string(config.workers) + " worker(s) and " +
                     std::to_string(config.servers) + " server(s) on this host; run directory " + config.out);
  return distsgd::comm::launch_self(argc, argv, labels, {{"DISTSGD_OUT", config.out}});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"distsgd: distributed SGD algorithms on one engine, compared side by side"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help of every command");

  distsgd::TrainConfig config;
  TextOptions text;
  auto* train = app.add_subcommand("train", "train a model; writes config.json, metrics.jsonl, summary.json");
  add_train_options(*train, config, text);

  distsgd::cli::CommbenchConfig commbench_config;
  auto* commbench = app.add_subcommand(
      "commbench", "time allreduce_sum (and send/recv) of 4 KiB..64 MiB messages over N local processes; fit "
                   "t(m) = alpha + beta*m to each size's fastest repeat");
  add_commbench_options(*commbench, commbench_config);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  try {
    if (train->parsed()) {
      config.synthetic_shape = parse_shape(text.synthetic_shape);
      for (const auto& s : text.slowdowns) config.slowdowns.push_back(parse_slowdown(s));
      const auto env = distsgd::comm::process_env_from_environment();
      if (config.processes() > 1 && !env) return launch_processes(config, argc, argv);
      auto summary = distsgd::train::run_training(config);
      // One results line per run: from worker 0.
      if (!env || env->rank == 0 || config.processes() == 1) std::cout << results_line(summary) << std::endl;
    }
    if (commbench->parsed()) return distsgd::cli::run_commbench(commbench_config, argc, argv);
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
