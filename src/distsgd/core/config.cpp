#include "distsgd/core/config.hpp"

#include "distsgd/core/error.hpp"

#include <nlohmann/json.hpp>

#include "distsgd/algo/algorithm.hpp"
#include "distsgd/core/text.hpp"

#include <algorithm>

namespace distsgd {

double TrainConfig::slowdown_of(int64_t worker) const {
  double factor = 1;
  for (const auto& [rank, f] : slowdowns) {
    if (rank == worker) factor = f;
  }
  return factor;
}

void validate(const TrainConfig& c) {
  require(c.batch_size > 0, "--batch-size must be positive (got " + std::to_string(c.batch_size) + ")");
  require(c.lr >= 0, "--lr must not be negative");
  require(c.momentum >= 0 && c.momentum < 1, "--momentum must be in [0, 1)");
  require(c.weight_decay >= 0, "--weight-decay must not be negative");
  require(c.lr_scaling == "none" || c.lr_scaling == "linear",
          "--lr-scaling must be 'none' or 'linear' (got '" + c.lr_scaling + "')");
  require(c.warmup_epochs >= 0, "--warmup-epochs must not be negative");
  require(std::is_sorted(c.lr_decay_epochs.begin(), c.lr_decay_epochs.end()),
          "--lr-decay-epochs must be given in increasing order");
  require(c.lr_decay_factor > 0 && c.lr_decay_factor <= 1, "--lr-decay-factor must be in (0, 1]");
  require(c.epochs > 0, "--epochs must be positive");
  require(c.time_budget >= 0, "--time-budget must not be negative");
  require(c.target_accuracy >= 0 && c.target_accuracy <= 1, "--target-accuracy must be in [0, 1]");
  require(c.max_steps >= 0, "--max-steps must not be negative");
  require(c.threads >= 0, "--threads must not be negative");
  require(c.prefetch >= 0, "--prefetch must not be negative");
  require(c.eval_batch_size > 0, "--eval-batch-size must be positive");
  require(c.workers >= 1, "--workers must be at least 1");
  require(c.servers >= 0, "--servers must not be negative");
  require(c.checkpoint_every_steps >= 0, "--checkpoint-every-steps must not be negative");
  require(c.mlp_width > 0 && c.mlp_hidden_layers >= 0, "--mlp-width must be positive");
  const auto& algo = algo::find_algorithm(c.algorithm);
  require(c.algorithm != "sgd" || c.workers == 1,
          "--algo sgd is single-process training: use --workers 1, or a distributed algorithm (--algo arsgd)");
  require(!algo.needs_servers || c.servers >= 1,
          "--algo " + c.algorithm + " is a parameter-server algorithm: give --servers 1 or more");
  require(algo.needs_servers || c.servers == 0, "--algo " + c.algorithm + " takes no --servers (it has none)");
  require(c.timeout > 0, "--timeout must be positive");
  require(c.overlap == "none" || c.overlap == "wfbp" || c.overlap == "multistep",
          "--overlap must be none, wfbp or multistep (got '" + c.overlap + "')");
  require(c.bucket_mb > 0 && c.first_bucket_mb > 0, "--bucket-mb and --first-bucket-mb must be positive");
  require(c.sharding == "layer" || c.sharding == "memory",
          "--sharding must be layer or memory (got '" + c.sharding + "')");
  require(c.momentum_at == "auto" || c.momentum_at == "worker" || c.momentum_at == "server" ||
              c.momentum_at == "both",
          "--momentum-at must be worker, server, both or auto (got '" + c.momentum_at + "')");
  if (c.momentum_at != "auto") {
    const auto configurable = algo::algorithm_names_where([](const auto& a) { return !a.momentum_placements.empty(); });
    require(!algo.momentum_placements.empty(),
            "--momentum-at applies to " + join(configurable) + " only (not " + c.algorithm + ")");
    const auto& places = algo.momentum_placements;
    require(std::find(places.begin(), places.end(), c.momentum_at) != places.end(),
            "--momentum-at " + c.momentum_at + " is not a place for " + c.algorithm + "'s momentum (it takes " +
                join(places) + "; both: workers and servers that take separate steps)");
  }
  require(c.staleness >= 0, "--staleness must not be negative");
  require(c.tau >= 1, "--tau must be at least 1");
  require(c.moving_rate >= 0 && c.moving_rate <= 1, "--moving-rate must be in [0, 1] (0: 0.9 / workers)");
  require(c.pi >= 1, "--pi must be at least 1");
  require(c.aladdin_alpha == "text" || c.aladdin_alpha == "count",
          "--aladdin-alpha must be text or count (got '" + c.aladdin_alpha + "')");
  require(c.aladdin_variant == "full" || c.aladdin_variant == "l1" || c.aladdin_variant == "l2",
          "--aladdin-variant must be full, l1 or l2 (got '" + c.aladdin_variant + "')");
  require(c.compress == "none" || c.compress == "dgc", "--compress must be none or dgc (got '" + c.compress + "')");
  require(c.density > 0 && c.density <= 1, "--density must be in (0, 1]");
  require(c.dgc_clip_norm >= 0 && c.dgc_warmup_epochs >= 0,
          "--dgc-clip-norm and --dgc-warmup-epochs must not be negative");
  if (c.compress == "dgc") {
    require(algo.compressible_gradients,
            "--compress dgc compresses gradient uplinks of " +
                join(algo::algorithm_names_where([](const auto& a) { return a.compressible_gradients; })) +
                " only (not " + c.algorithm + ")");
    require(c.momentum_at != "server",
            "--compress dgc keeps momentum on the worker (momentum correction): --momentum-at server contradicts it");
    require(c.resume.empty(), "--resume: checkpoints do not hold DGC's accumulators yet; --compress dgc cannot resume");
    require(c.algorithm != "arsgd" || c.overlap != "multistep",
            "--compress dgc with arsgd exchanges the sparse gradient after backward: --overlap multistep does not apply");
  }
  for (const auto& [rank, factor] : c.slowdowns) {
    require(rank >= 0 && rank < c.workers, "--slowdown " + std::to_string(rank) + ":" + std::to_string(factor) +
                                               ": there is no worker " + std::to_string(rank));
    require(factor >= 1, "--slowdown factor must be at least 1");
  }
  require(c.gossip_prob >= 0 && c.gossip_prob <= 1, "--gossip-prob must be in [0, 1]");
  require(c.gossip_mode == "pull" || c.gossip_mode == "push",
          "--gossip-mode must be pull or push (got '" + c.gossip_mode + "')");
  require(c.sgp_overlap == 0 || c.sgp_overlap == 1, "--sgp-overlap must be 0 or 1");
  require(!algo.decentralized || c.workers >= 2,
          "--algo " + c.algorithm + " is decentralized: use --workers 2 or more");
  require(c.test_init_spread >= 0 && c.test_delay_ms >= 0,
          "--test-init-spread and --test-delay-ms must not be negative");
  require(!c.overwrite || c.resume.empty(), "--overwrite and --resume exclude each other");
}

nlohmann::json to_json(const TrainConfig& c) {
  return {
      {"model", c.model},
      {"mlp_width", c.mlp_width},
      {"mlp_hidden_layers", c.mlp_hidden_layers},
      {"batch_norm", c.batch_norm},
      {"dataset", c.dataset},
      {"data_dir", c.data_dir},
      {"synthetic_shape", c.synthetic_shape},
      {"synthetic_classes", c.synthetic_classes},
      {"synthetic_train_size", c.synthetic_train_size},
      {"synthetic_test_size", c.synthetic_test_size},
      {"batch_size", c.batch_size},
      {"global_batch", c.global_batch()},
      {"lr", c.lr},
      {"momentum", c.momentum},
      {"weight_decay", c.weight_decay},
      {"lr_scaling", c.lr_scaling},
      {"warmup_epochs", c.warmup_epochs},
      {"lr_decay_epochs", c.lr_decay_epochs},
      {"lr_decay_factor", c.lr_decay_factor},
      {"epochs", c.epochs},
      {"time_budget", c.time_budget},
      {"target_accuracy", c.target_accuracy},
      {"max_steps", c.max_steps},
      {"seed", c.seed},
      {"threads", c.threads},
      {"prefetch", c.prefetch},
      {"eval_batch_size", c.eval_batch_size},
      {"algorithm", c.algorithm},
      {"workers", c.workers},
      {"servers", c.servers},
      {"timeout", c.timeout},
      {"overlap", c.overlap},
      {"bucket_mb", c.bucket_mb},
      {"first_bucket_mb", c.first_bucket_mb},
      {"sharding", c.sharding},
      {"slowdowns", c.slowdowns},
      {"trace", c.trace},
      {"momentum_at", c.momentum_at},
      {"staleness", c.staleness},
      {"tau", c.tau},
      {"moving_rate", c.moving_rate},
      {"pi", c.pi},
      {"aladdin_alpha", c.aladdin_alpha},
      {"aladdin_variant", c.aladdin_variant},
      {"compress", c.compress},
      {"density", c.density},
      {"dgc_clip_norm", c.dgc_clip_norm},
      {"dgc_warmup_epochs", c.dgc_warmup_epochs},
      {"gossip_prob", c.gossip_prob},
      {"gossip_mode", c.gossip_mode},
      {"sgp_overlap", c.sgp_overlap},
      {"test_init_spread", c.test_init_spread},
      {"test_delay_ms", c.test_delay_ms},
      {"out", c.out},
      {"resume", c.resume},
      {"checkpoint_each_epoch", c.checkpoint_each_epoch},
      {"checkpoint_every_steps", c.checkpoint_every_steps},
  };
}

}  // namespace distsgd
