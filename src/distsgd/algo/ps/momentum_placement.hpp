// Where momentum and weight decay live in a parameter-server algorithm (--momentum-at), when the paper leaves it
// open. With momentum on the worker, the worker turns each gradient into its momentum direction before sending
// (and for its local steps) and the server applies plain SGD; on the server, workers send raw gradients and the
// server's optimizer keeps the momentum buffer of its slice. `both` (ALADDIN only, whose workers and server take
// separate steps): momentum for the workers' local steps and for the server's global updates, weight decay once,
// on the workers. DGC's momentum correction puts momentum on the worker whatever the flag says.
#pragma once
#include "distsgd/core/config.hpp"
#include "distsgd/train/sgd.hpp"

namespace distsgd::algo::ps {

inline bool momentum_on_worker(const TrainConfig& c, bool algorithm_default_on_worker) {
  if (c.compress == "dgc" || c.momentum_at == "both") return true;
  return c.momentum_at == "auto" ? algorithm_default_on_worker : c.momentum_at == "worker";
}

inline bool momentum_on_server(const TrainConfig& c, bool algorithm_default_on_worker) {
  if (c.compress == "dgc") return false;
  if (c.momentum_at == "both") return true;
  return c.momentum_at == "auto" ? !algorithm_default_on_worker : c.momentum_at == "server";
}

inline train::MomentumSgd worker_optimizer(const TrainConfig& c, int64_t numel, bool on_worker) {
  return on_worker ? train::MomentumSgd(numel, c.momentum, c.weight_decay) : train::MomentumSgd(numel, 0, 0);
}

// The server's optimizer for its slice, given the algorithm's default placement.
inline train::MomentumSgd server_optimizer(const TrainConfig& c, int64_t numel, bool algorithm_default_on_worker) {
  if (!momentum_on_server(c, algorithm_default_on_worker)) return train::MomentumSgd(numel, 0, 0);
  // Workers that keep momentum have already added weight decay to what they send.
  const bool decay_on_worker = momentum_on_worker(c, algorithm_default_on_worker);
  return train::MomentumSgd(numel, c.momentum, decay_on_worker ? 0 : c.weight_decay);
}

}  // namespace distsgd::algo::ps
