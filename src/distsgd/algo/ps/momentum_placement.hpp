// Where momentum and weight decay live in a parameter-server algorithm (--momentum-at), when the paper leaves it
// open. With momentum on the worker, the worker turns each gradient into its momentum direction before sending
// (and for its local steps) and the server applies plain SGD; on the server, workers send raw gradients and the
// server's optimizer keeps the momentum buffer of its slice. `both` (ALADDIN only, whose workers and server take
// separate steps): momentum for the workers' local steps and for the server's global updates, weight decay once,
// on the workers. DGC's momentum correction puts momentum on the worker whatever the flag says.
#pragma once
#include "distsgd/algo/compression/compression_options.hpp"
#include "distsgd/algo/ps/ps_options.hpp"
#include "distsgd/optim/sgd.hpp"

namespace distsgd::algo::ps {

inline bool momentum_on_worker(const TrainConfig& c, bool algorithm_default_on_worker) {
  const MomentumAt at = kMomentumAt.of(c);
  if (compression::dgc_enabled(c) || at == MomentumAt::kBoth) return true;
  return at == MomentumAt::kAuto ? algorithm_default_on_worker : at == MomentumAt::kWorker;
}

inline bool momentum_on_server(const TrainConfig& c, bool algorithm_default_on_worker) {
  const MomentumAt at = kMomentumAt.of(c);
  if (compression::dgc_enabled(c)) return false;
  if (at == MomentumAt::kBoth) return true;
  return at == MomentumAt::kAuto ? !algorithm_default_on_worker : at == MomentumAt::kServer;
}

inline optim::MomentumSgd worker_optimizer(const TrainConfig& c, int64_t numel, bool on_worker) {
  return on_worker ? optim::MomentumSgd(numel, c.momentum, c.weight_decay) : optim::MomentumSgd(numel, 0, 0);
}

// The server's optimizer for its slice, given the algorithm's default placement.
inline optim::MomentumSgd server_optimizer(const TrainConfig& c, int64_t numel, bool algorithm_default_on_worker) {
  if (!momentum_on_server(c, algorithm_default_on_worker)) return optim::MomentumSgd(numel, 0, 0);
  // Workers that keep momentum have already added weight decay to what they send.
  const bool decay_on_worker = momentum_on_worker(c, algorithm_default_on_worker);
  return optim::MomentumSgd(numel, c.momentum, decay_on_worker ? 0 : c.weight_decay);
}

}  // namespace distsgd::algo::ps
