// Every knob of a training run. The options that fill it are declared once: training's own in train/options.cpp,
// each algorithm's in its own file (core/option.hpp says how); the command line, validation, --help and
// config.json all read those declarations.
#pragma once
#include "distsgd/core/enum_names.hpp"

#include <any>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace distsgd {

enum class LrScaling { kNone, kLinear };  // linear: lr * global_batch / 256 (Goyal et al.)
inline const EnumNames<LrScaling>& enum_names(LrScaling) {
  static const EnumNames<LrScaling> names{{LrScaling::kNone, "none"}, {LrScaling::kLinear, "linear"}};
  return names;
}

// The optimizer a worker steps its own parameters with (optim/worker_optimizer.hpp): momentum SGD, or AdamW with
// PyTorch's semantics (decoupled weight decay).
enum class Optimizer { kSgd, kAdamW };
inline const EnumNames<Optimizer>& enum_names(Optimizer) {
  static const EnumNames<Optimizer> names{{Optimizer::kSgd, "sgd"}, {Optimizer::kAdamW, "adamw"}};
  return names;
}

// What a distributed run does when a worker process is lost (it died, or gave no sign of life for the liveness
// limit): end with one line naming it (abort), or go on with the others (continue). kDefault: the algorithm's own
// choice (continue where no step waits for every worker: the asynchronous parameter-server and gossip algorithms).
enum class WorkerLoss { kDefault, kAbort, kContinue };
inline const EnumNames<WorkerLoss>& enum_names(WorkerLoss) {
  static const EnumNames<WorkerLoss> names{
      {WorkerLoss::kDefault, "default"}, {WorkerLoss::kAbort, "abort"}, {WorkerLoss::kContinue, "continue"}};
  return names;
}

struct TrainConfig {
  // Model and data.
  std::string model = "lenet5";  // registry name or TorchScript .pt path
  int64_t mlp_width = 2048;
  int64_t mlp_hidden_layers = 2;
  bool batch_norm = true;
  std::string dataset = "fashion-mnist";
  std::string data_dir;                             // empty: the dataset's default directory
  std::vector<int64_t> synthetic_shape{1, 28, 28};  // C, H, W
  int64_t synthetic_classes = 10;
  int64_t synthetic_train_size = 4096;
  int64_t synthetic_test_size = 512;
  std::string data_file;   // --dataset text: the corpus (empty: the fortune database, data/text.hpp)
  int64_t context = 64;    // --dataset text: bytes per sequence (and gpt-mini's positions)
  int64_t gpt_layers = 2;  // gpt-mini: transformer blocks, attention heads, model width
  int64_t gpt_heads = 4;
  int64_t gpt_dim = 64;

  // Optimization (Goyal et al. recipe).
  int64_t batch_size = 64;  // per worker
  double lr = 0.05;
  Optimizer optimizer = Optimizer::kSgd;  // where the worker steps its own parameters
  double momentum = 0.9;                  // sgd
  double weight_decay = 1e-4;             // sgd: L2 added to the gradient; adamw: decoupled (p -= lr * wd * p)
  double adam_beta1 = 0.9;                // adamw: PyTorch's defaults
  double adam_beta2 = 0.999;
  double adam_eps = 1e-8;
  LrScaling lr_scaling = LrScaling::kNone;
  double warmup_epochs = 0;
  std::vector<double> lr_decay_epochs;
  double lr_decay_factor = 0.1;

  // When to stop: whichever comes first. 0 means "no limit" for all but epochs.
  int64_t epochs = 1;
  double time_budget = 0;       // seconds of wall time
  double target_accuracy = 0;   // stop after the evaluation that reaches it
  double target_loss = 0;       // stop after the evaluation whose test loss is at most this (0: never)
  int64_t max_steps = 0;        // iterations per worker
  int64_t evals_per_epoch = 1;  // evaluations on the test set per epoch, at evenly spaced steps
  // A loss that is NaN, infinite or above this many times max(first step's loss, 1) stops the run as "diverged"
  // (0: only NaN and infinite losses do).
  double divergence_factor = 100;

  // Execution.
  uint64_t seed = 1;
  int64_t threads = 0;  // intra-op threads per process; 0: cores / processes
  int64_t prefetch = 4;
  int64_t eval_batch_size = 1000;
  double progress_seconds = 5;  // progress line interval on stderr

  // Distribution.
  std::string algorithm = "arsgd";
  int64_t workers = 1;
  int64_t servers = 0;
  double timeout = 300;  // seconds; bounds every communication
  WorkerLoss on_worker_loss = WorkerLoss::kDefault;
  std::vector<std::pair<int64_t, double>> slowdowns;  // worker rank -> compute time factor
  bool trace = false;                                 // write trace.json (Chrome trace format)
  // The emulated cluster the launcher builds (cluster/cluster_plan.hpp reads these); empty net: plain loopback.
  std::string net;
  int64_t hosts = 0;  // 0: one per rank
  std::string placement = "round-robin";
  std::vector<std::string> links;
  // A virtual cluster (train/virtual_run.hpp): every rank an actor of this one process, on the simulated `cluster`
  // (a preset or file, as distsgd simulate), each step's compute timed by `profile` (a model profile JSON).
  bool virtual_cluster = false;
  std::string profile;
  std::string cluster = "10gbe";
  // Testing only (a hidden flag): worker i starts from x0 + i * spread, so conservation laws of the mixing are
  // visible even with lr 0.
  double test_init_spread = 0;
  // The settings of the algorithms, each declared by the algorithms that take it (StoredOption, core/option.hpp)
  // and read through that declaration; absent: its default.
  std::map<std::string, std::any> algorithm_settings;

  // Output and checkpoints.
  std::string out;  // run directory; empty: runs/<model>-<dataset>-<time>
  bool overwrite = false;
  std::string resume;  // run directory (or checkpoint file) to continue from
  bool checkpoint_each_epoch = true;
  int64_t checkpoint_every_steps = 0;  // 0: only at epoch ends

  int64_t global_batch() const { return batch_size * workers; }
  int64_t processes() const { return workers + servers; }
  double slowdown_of(int64_t worker) const;
};

}  // namespace distsgd
