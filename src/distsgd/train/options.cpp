#include "distsgd/train/options.hpp"

#include "distsgd/algo/algorithm.hpp"
#include "distsgd/core/host_cores.hpp"
#include "distsgd/core/rank_factor.hpp"
#include "distsgd/data/dataset.hpp"
#include "distsgd/models/model.hpp"

#include <algorithm>
#include <sstream>
#include <thread>
#include <tuple>

namespace distsgd::train {
namespace {

using C = TrainConfig;

// "CxHxW" -> {C, H, W}.
OptionSpec synthetic_shape_option() {
  OptionSpec spec;
  spec.flag = "--synthetic-shape";
  spec.key = "synthetic_shape";
  spec.help = "synthetic images: CxHxW";
  spec.value_name = "CxHxW";
  spec.shown_default = "1x28x28";
  spec.parse = [](C& c, const std::vector<std::string>& values) {
    const std::string& text = values.at(0);
    std::vector<int64_t> dims;
    std::stringstream in(text);
    std::string part;
    while (std::getline(in, part, 'x')) {
      try {
        dims.push_back(parse_int("--synthetic-shape", part));
      } catch (const Error&) {
        throw Error("--synthetic-shape: '" + text + "' is not of the form CxHxW (e.g. 3x32x32)");
      }
    }
    require(dims.size() == 3 && dims[0] > 0 && dims[1] > 0 && dims[2] > 0,
            "--synthetic-shape: '" + text + "' is not of the form CxHxW with positive sizes");
    c.synthetic_shape = dims;
  };
  spec.value = [](const C& c) { return nlohmann::json(c.synthetic_shape); };
  return spec;
}

// "RANK:FACTOR", repeatable.
OptionSpec slowdown_option() {
  OptionSpec spec;
  spec.flag = "--slowdown";
  spec.key = "slowdowns";
  spec.help = "worker RANK takes FACTOR times its compute time (repeatable)";
  spec.value_name = "RANK:FACTOR";
  spec.arity = OptionSpec::Arity::kMany;
  spec.parse = [](C& c, const std::vector<std::string>& values) {
    c.slowdowns.clear();
    for (const auto& text : values) c.slowdowns.push_back(parse_rank_factor("--slowdown", text));
  };
  spec.value = [](const C& c) { return nlohmann::json(c.slowdowns); };
  spec.check = [](const C& c) {
    for (const auto& [rank, factor] : c.slowdowns) {
      require(rank >= 0 && rank < c.workers, "--slowdown " + std::to_string(rank) + ":" + text_of(factor) +
                                                 ": there is no worker " + std::to_string(rank));
      require(factor >= 1, "--slowdown factor must be at least 1");
    }
  };
  return spec;
}

// What a virtual run cannot honour, and what it needs.
void virtual_cluster_rules(const C& c) {
  if (!c.virtual_cluster) {
    require(c.profile.empty(), "--profile is for virtual runs: add --virtual");
    return;
  }
  require(!c.profile.empty(),
          "--virtual needs --profile FILE|DEVICE: the time of each step's compute on the "
          "simulated device (a device preset such as titan-v or v100-sxm2, or a file from distsgd "
          "profile --model M --out FILE)");
  require(c.net.empty() && c.hosts == 0 && c.links.empty(),
          "--net, --hosts and --link build an emulated cluster of processes; a virtual run simulates its network: "
          "describe it with --cluster");
  require(c.timeout == TrainConfig{}.timeout,
          "--timeout does not apply to a virtual run (no wait can hang: a "
          "deadlock is reported as one, naming who waits for what)");
  require(c.resume.empty(), "--resume: a virtual run writes no checkpoints (it is deterministic: run it again)");
  require(c.time_budget == 0,
          "--time-budget counts wall time; a virtual run's time is simulated (use --epochs or "
          "--max-steps)");
}

// The flags of the optimizer the run did not choose would be ignored: refused.
void optimizer_rules(const C& c) {
  const C defaults;
  if (c.optimizer == Optimizer::kAdamW) {
    require(c.momentum == defaults.momentum,
            "--momentum is momentum SGD's: AdamW's is --adam-beta1 (leave --momentum out with --optimizer adamw)");
    return;
  }
  for (const auto& [flag, given, by_default] : {std::tuple{"--adam-beta1", c.adam_beta1, defaults.adam_beta1},
                                                std::tuple{"--adam-beta2", c.adam_beta2, defaults.adam_beta2},
                                                std::tuple{"--adam-eps", c.adam_eps, defaults.adam_eps}}) {
    require(given == by_default, std::string(flag) + " is AdamW's: give --optimizer adamw, or leave it out");
  }
}

void add_group(std::vector<OptionSpec>& all, const std::string& group, std::vector<OptionSpec> specs) {
  for (auto& spec : specs) {
    spec.group = group;
    all.push_back(std::move(spec));
  }
}

std::vector<OptionSpec> declare_options() {
  std::string algorithms;
  for (const auto& a : algo::algorithms()) algorithms += "\n    " + a.name + ": " + a.description;
  const auto independent = algo::algorithm_names_where([](const auto& a) { return a.independent_workers; });
  const Rule<double> unit_interval{[](const double& v) { return v >= 0 && v < 1; }, "must be in [0, 1)"};
  const Rule<double> decay_factor{[](const double& v) { return v > 0 && v <= 1; }, "must be in (0, 1]"};
  // More compute threads than this only slow a process down; 100,000 made the thread pool start threads until the
  // host stalled.
  const int64_t max_threads = std::max<int64_t>(256, 4 * host_cores());
  const Rule<int64_t> thread_count{
      [max_threads](const int64_t& v) { return v >= 0 && v <= max_threads; },
      "must be in [0, " + std::to_string(max_threads) + "] (at most 4 per core of this host, or 256)"};
  const Rule<std::vector<double>> increasing{
      [](const std::vector<double>& v) { return std::is_sorted(v.begin(), v.end()); },
      "must be given in increasing order"};

  std::vector<OptionSpec> all;
  add_group(
      all, "Model and data",
      {
          field_option("--model", &C::model, "model: " + join(models::model_names()) + ", or a TorchScript .pt file"),
          field_option("--mlp-width", &C::mlp_width, "hidden width of mlp", positive<int64_t>()),
          field_option("--mlp-layers", &C::mlp_hidden_layers, "hidden layers of mlp", non_negative<int64_t>())
              .named("mlp_hidden_layers"),
          switch_option("--no-batch-norm", &C::batch_norm, false, "batch_norm",
                        "vgg without BatchNorm (the original vgg11/vgg16)"),
          field_option("--dataset", &C::dataset, "dataset: " + join(data::dataset_names())),
          field_option("--data-dir", &C::data_dir,
                       "directory of the dataset files (default: /usr/share/datasets/<dataset>)"),
          synthetic_shape_option(),
          field_option("--synthetic-classes", &C::synthetic_classes, "synthetic: number of classes",
                       positive<int64_t>()),
          field_option("--synthetic-train-size", &C::synthetic_train_size, "synthetic: training samples",
                       positive<int64_t>()),
          field_option("--synthetic-test-size", &C::synthetic_test_size, "synthetic: test samples",
                       positive<int64_t>()),
          field_option("--data-file", &C::data_file,
                       "text: the corpus, a text file (gzip allowed) or a fortune database folder (default: "
                       "/usr/share/games/fortunes, Debian's fortunes package); the last 10% is the test split"),
          field_option("--context", &C::context, "text: bytes per sequence (gpt-mini's context)", positive<int64_t>()),
          field_option("--gpt-layers", &C::gpt_layers, "gpt-mini: transformer blocks", positive<int64_t>()),
          field_option("--gpt-heads", &C::gpt_heads, "gpt-mini: attention heads (dividing --gpt-dim)",
                       positive<int64_t>()),
          field_option("--gpt-dim", &C::gpt_dim, "gpt-mini: model width", positive<int64_t>()),
      });
  add_group(
      all, "Optimization",
      {
          field_option("--batch-size", &C::batch_size, "minibatch per worker", positive<int64_t>()),
          field_option("--lr", &C::lr, "base learning rate (0: no step)", non_negative<double>()),
          field_option("--optimizer", &C::optimizer,
                       "the workers' optimizer: momentum SGD, or AdamW (torch.optim.AdamW: decoupled weight "
                       "decay, bias corrections); adamw only where the worker steps its own parameters")
              .checked(optimizer_rules),
          field_option("--momentum", &C::momentum, "SGD momentum", unit_interval),
          field_option("--weight-decay", &C::weight_decay,
                       "weight decay: sgd adds wd * p to the gradient (L2); adamw decays p by lr * wd apart",
                       non_negative<double>()),
          field_option("--adam-beta1", &C::adam_beta1, "AdamW: decay of the gradient's average", unit_interval),
          field_option("--adam-beta2", &C::adam_beta2, "AdamW: decay of the squared gradient's average", unit_interval),
          field_option("--adam-eps", &C::adam_eps, "AdamW: added to the denominator's square root", positive<double>()),
          field_option("--lr-scaling", &C::lr_scaling, "none, or linear: lr * global batch / 256 (Goyal et al.)"),
          field_option("--warmup-epochs", &C::warmup_epochs,
                       "gradual warm-up over this many epochs, linear from lr/k to lr (Goyal et al.), k = global "
                       "batch / 256 with --lr-scaling linear, else the number of workers",
                       non_negative<double>()),
          list_option("--lr-decay-epochs", &C::lr_decay_epochs,
                      "epochs at which the learning rate is multiplied by --lr-decay-factor "
                      "(e.g. --lr-decay-epochs 30 60)",
                      increasing),
          field_option("--lr-decay-factor", &C::lr_decay_factor, "step decay factor", decay_factor),
      });
  add_group(all, "When to stop (whichever comes first)",
            {
                field_option("--epochs", &C::epochs, "epochs to train", positive<int64_t>()),
                field_option("--time-budget", &C::time_budget,
                             "stop after this many seconds of wall time (0: no limit); " + join(independent) +
                                 ": each worker stops on its own and the run evaluates only at the end",
                             non_negative<double>()),
                field_option("--target-accuracy", &C::target_accuracy,
                             "stop after the first evaluation with at least this test accuracy (0: never)",
                             within<double>(0, 1)),
                field_option("--target-loss", &C::target_loss,
                             "stop after the first evaluation with at most this test loss (mean cross-entropy in "
                             "nats; for text, bits per byte x ln 2; 0: never)",
                             non_negative<double>()),
                field_option("--max-steps", &C::max_steps, "stop after this many iterations (0: no limit)",
                             non_negative<int64_t>()),
                field_option("--evals-per-epoch", &C::evals_per_epoch,
                             "evaluations on the test set per epoch, at evenly spaced steps (the last at its end), "
                             "for finer accuracy-against-time curves; every worker evaluates at the same step (a "
                             "collective; not with --time-budget for " +
                                 join(independent) + "); in a virtual run an evaluation takes no virtual time",
                             positive<int64_t>()),
                field_option("--divergence-factor", &C::divergence_factor,
                             "stop as diverged when a worker's loss is NaN, infinite, or above this many times "
                             "max(its first loss, 1) (0: NaN and infinite only)",
                             non_negative<double>()),
            });
  add_group(
      all, "Execution",
      {
          field_option("--seed", &C::seed, "seed of weights and data order"),
          field_option("--threads", &C::threads, "compute threads per process (0: cores / processes)", thread_count),
          field_option("--prefetch", &C::prefetch, "batches prepared ahead by the loader thread (0: none)",
                       non_negative<int64_t>()),
          field_option("--eval-batch-size", &C::eval_batch_size, "batch size of evaluation", positive<int64_t>()),
          field_option("--progress-seconds", &C::progress_seconds, "seconds between progress lines on stderr",
                       non_negative<double>()),
      });
  add_group(all, "Distribution",
            {
                field_option("--algo", &C::algorithm, "algorithm:" + algorithms).named("algorithm"),
                field_option("--workers", &C::workers, "worker processes", at_least<int64_t>(1)),
                field_option("--servers", &C::servers, "parameter-server processes (ranks after the workers)",
                             non_negative<int64_t>()),
                field_option("--timeout", &C::timeout, "seconds any communication may take before the run fails",
                             positive<double>()),
                field_option(
                    "--on-worker-loss", &C::on_worker_loss,
                    "when a worker dies (or is silent for --timeout / 3 s, within 4..10 s): abort ends the run with a "
                    "line naming it; continue goes on with the others (asp, ssp, easgd, aladdin and the gossip "
                    "family: their default); default: the algorithm's choice. Worker 0 and the servers are never "
                    "optional"),
                slowdown_option(),
                switch_option("--trace", &C::trace, true, "trace",
                              "write trace.json (Chrome trace format: chrome://tracing, Perfetto)"),
                field_option("--test-init-spread", &C::test_init_spread, "", non_negative<double>()).hide(),
            });
  add_group(all, "Emulated cluster (every host a network namespace; needs root or user namespaces)",
            {
                field_option("--net", &C::net,
                             "every host's link: RATE[,delay=T][,jitter=T][,loss=P%][,down=START+LENGTH], RATE in bit, "
                             "kbit, mbit, gbit (or bps, kbps, mbps, gbps: bytes/s, as tc) or unshaped; e.g. "
                             "1gbit,delay=0.2ms; down=5s+3s: the link is down 3 s from 5 s after the network came up"),
                field_option("--hosts", &C::hosts, "emulated hosts; ranks on one host share its link (0: one per rank)",
                             non_negative<int64_t>()),
                field_option("--placement", &C::placement,
                             "ranks to hosts: round-robin (rank r on host r mod H) or block (consecutive ranks)"),
                list_option("--link", &C::links,
                            "override one link, repeatable: workerN=, serverN= or hostN= and a --net description "
                            "(fields not given keep --net's)"),
            });
  add_group(all, "Virtual cluster (every rank in this process: real arithmetic, simulated time)",
            {
                switch_option("--virtual", &C::virtual_cluster, true, "virtual",
                              "run the workers and servers as actors of this one process on the simulated --cluster, "
                              "each step's compute timed by --profile: the real algorithms' arithmetic and messages, "
                              "in the order and at the times the cluster would give them (README: \"Accuracy at "
                              "scale\")")
                    .checked(virtual_cluster_rules),
                field_option("--profile", &C::profile,
                             "virtual: each step's compute time: a profile JSON (distsgd profile --out FILE: measured "
                             "here, or with --device: analytical), or a device preset (distsgd profile "
                             "--list-devices), for the model's analytical profile on it"),
                field_option("--cluster", &C::cluster,
                             "virtual: the cluster, a preset (distsgd simulate --list-clusters) or a JSON file"),
            });
  add_group(all, "Output and checkpoints",
            {
                field_option("--out", &C::out, "run directory (default: runs/<model>-<dataset>-<time>)"),
                switch_option("--overwrite", &C::overwrite, true, "overwrite", "replace a run already in --out"),
                field_option("--resume", &C::resume, "continue the run in this directory from its checkpoint"),
                switch_option("--no-checkpoint", &C::checkpoint_each_epoch, false, "checkpoint_each_epoch",
                              "do not write a checkpoint at each epoch's end"),
                field_option("--checkpoint-every-steps", &C::checkpoint_every_steps,
                             "also write a checkpoint every this many steps (0: only at epoch ends)",
                             non_negative<int64_t>()),
            });
  for (const auto& spec : algo::algorithm_options()) all.push_back(spec);
  return all;
}

}  // namespace

const std::vector<OptionSpec>& train_options() {
  // Declared again when an algorithm was registered since (its flags join the list).
  static std::vector<OptionSpec> options;
  static size_t algorithms_seen = 0;
  if (algorithms_seen != algo::algorithms().size()) {
    algorithms_seen = algo::algorithms().size();
    options = declare_options();
  }
  return options;
}

void set_option(TrainConfig& config, const std::string& flag, const std::vector<std::string>& values) {
  for (const auto& spec : train_options()) {
    if (spec.flag == flag) return spec.parse(config, values);
  }
  throw Error("unknown option " + flag);
}

void validate(const TrainConfig& c) {
  for (const auto& spec : train_options()) {
    if (spec.check) spec.check(c);
  }
  require(!c.overwrite || c.resume.empty(), "--overwrite and --resume exclude each other");
  require(c.dataset != "text" || c.target_accuracy == 0,
          "--target-accuracy: a language model (--dataset text) reports bits per byte, not accuracy; give "
          "--target-loss (nats: bits per byte x ln 2)");
  algo::validate_algorithm(c);
}

nlohmann::json config_json(const TrainConfig& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& spec : train_options()) j[spec.key] = spec.value(c);
  j["global_batch"] = c.global_batch();
  return j;
}

}  // namespace distsgd::train
