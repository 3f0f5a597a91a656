// Where momentum and weight decay live in an asynchronous parameter-server algorithm (--momentum-at), when the
// paper leaves it open. With momentum on the worker, the worker turns each gradient into its momentum direction
// before sending (and for its local steps) and the server applies plain SGD; on the server, workers send raw
// gradients and the server's optimizer keeps the momentum buffer of its slice.
#pragma once
#include "distsgd/core/config.hpp"
#include "distsgd/train/sgd.hpp"

namespace distsgd::algo::ps {

// DGC's momentum correction puts momentum on the worker whatever the algorithm's default.
inline bool momentum_on_worker(const TrainConfig& c, bool algorithm_default_on_worker) {
  if (c.compress == "dgc") return true;
  return c.momentum_at == "auto" ? algorithm_default_on_worker : c.momentum_at == "worker";
}

inline train::MomentumSgd worker_optimizer(const TrainConfig& c, int64_t numel, bool on_worker) {
  return on_worker ? train::MomentumSgd(numel, c.momentum, c.weight_decay) : train::MomentumSgd(numel, 0, 0);
}

inline train::MomentumSgd server_optimizer(const TrainConfig& c, int64_t numel, bool on_worker) {
  return on_worker ? train::MomentumSgd(numel, 0, 0) : train::MomentumSgd(numel, c.momentum, c.weight_decay);
}

}  // namespace distsgd::algo::ps
