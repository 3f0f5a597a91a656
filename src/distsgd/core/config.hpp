// Every knob of a training run, with validation. The command line fills it; config.json records it.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace distsgd {

struct TrainConfig {
  // Model and data.
  std::string model = "lenet5";  // registry name or TorchScript .pt path
  int64_t mlp_width = 2048;
  int64_t mlp_hidden_layers = 2;
  bool batch_norm = true;
  std::string dataset = "fashion-mnist";
  std::string data_dir;                         // empty: the dataset's default directory
  std::vector<int64_t> synthetic_shape{1, 28, 28};  // C, H, W
  int64_t synthetic_classes = 10;
  int64_t synthetic_train_size = 4096;
  int64_t synthetic_test_size = 512;

  // Optimization (Goyal et al. recipe).
  int64_t batch_size = 64;  // per worker
  double lr = 0.05;
  double momentum = 0.9;
  double weight_decay = 1e-4;
  std::string lr_scaling = "none";  // none | linear (lr * global_batch / 256)
  double warmup_epochs = 0;
  std::vector<double> lr_decay_epochs;
  double lr_decay_factor = 0.1;

  // When to stop: whichever comes first. 0 means "no limit" for all but epochs.
  int64_t epochs = 1;
  double time_budget = 0;      // seconds of wall time
  double target_accuracy = 0;  // stop after the evaluation that reaches it
  int64_t max_steps = 0;       // iterations per worker

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
  double timeout = 300;             // seconds; bounds every communication
  std::string overlap = "wfbp";     // AR-SGD: none | wfbp | multistep
  double bucket_mb = 25;            // AR-SGD buckets
  double first_bucket_mb = 1;
  std::string sharding = "memory";  // parameter server: layer | memory
  std::vector<std::pair<int64_t, double>> slowdowns;  // worker rank -> compute time factor
  bool trace = false;               // write trace.json (Chrome trace format)
  // Asynchronous parameter-server algorithms.
  std::string momentum_at = "auto";  // worker | server | auto (each algorithm's default)
  int64_t staleness = 10;            // SSP bound s
  int64_t tau = 2;                   // EASGD: iterations between exchanges
  double moving_rate = 0;            // EASGD alpha; 0: 0.9 / workers
  int64_t pi = 4;                    // ALADDIN: gradients of a worker per global update
  std::string aladdin_alpha = "text";    // text: 1 - 1/sqrt(n*pi); count: 1 - 1/sqrt(c)
  std::string aladdin_variant = "full";  // full | l1 | l2
  // Gradient compression of the uplink (BSP, ASP, SSP, AR-SGD).
  std::string compress = "none";  // none | dgc
  double density = 0.001;         // DGC: fraction of each tensor sent per step after the warm-up
  double dgc_clip_norm = 20;      // DGC: gradient-norm clipping threshold (scaled by 1/sqrt(workers)); 0: none
  double dgc_warmup_epochs = 4;   // DGC: density warm-up span (Lin et al.: 4 epochs)
  // Decentralized algorithms.
  double gossip_prob = 0.01;          // GoSGD: probability of a push after each iteration (IPDPS: 0.01)
  std::string gossip_mode = "pull";   // gossip: pull | push
  int64_t sgp_overlap = 0;            // SGP: 0 (wait for this iteration's message) | 1 (up to one late)
  // Testing only (hidden flags): worker i starts from x0 + i * spread, so conservation laws of the mixing are
  // visible even with lr 0; random sleeps up to this many ms before each gossip send and reply.
  double test_init_spread = 0;
  double test_delay_ms = 0;

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

// Throws distsgd::Error naming the first invalid value or impossible combination.
void validate(const TrainConfig& config);

nlohmann::json to_json(const TrainConfig& config);

}  // namespace distsgd
