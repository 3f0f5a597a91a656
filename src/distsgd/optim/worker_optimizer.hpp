// The optimizer a worker steps its own parameters with, whichever the run chose (--optimizer sgd|adamw): the one
// seam through which every algorithm whose worker updates its own model (sgd, AR-SGD, the gossip family, the outer
// loop's inner steps) takes its step, and saves and restores the optimizer's state in checkpoints. Algorithms whose
// server owns the update (the parameter-server family) keep momentum SGD and refuse another --optimizer.
//
//   auto optimizer = optim::make_worker_optimizer(config, flat.numel());
//   optimizer->step(flat.params(), flat.grads(), lr);            // after backward
//   optimizer->step(params_slice, grads_slice, lr, offset, n);   // a slice of the flat buffer; a sum of n grads
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace distsgd {
struct TrainConfig;
}

namespace distsgd::optim {

class WorkerOptimizer {
 public:
  virtual ~WorkerOptimizer() = default;

  // One optimizer step of params[offset, offset + n), n = params.numel(), from grads of the same length: both
  // contiguous float32, the flat buffers or narrow()s of them (offset locates the slice in the optimizer's state,
  // which covers the whole flat buffer). The gradient is divided by `divide_grads_by` first, in the same pass (a sum
  // of n workers' gradients -> their mean); grads are left unchanged. One fused pass (optim/kernels.hpp). A slice
  // is stepped whole each time (AdamW counts steps per slice, as PyTorch counts them per parameter).
  virtual void step(at::Tensor params, at::Tensor grads, double lr, int64_t offset = 0, double divide_grads_by = 1) = 0;

  // "sgd" or "adamw", as --optimizer names it.
  virtual std::string name() const = 0;

  // The state a checkpoint must hold to continue bit for bit, by name (sgd: "momentum", the velocity; adamw:
  // "adamw_exp_avg", "adamw_exp_avg_sq" and "adamw_steps"). The tensors may share memory with the optimizer: copy
  // them before its next step.
  virtual std::map<std::string, at::Tensor> state() = 0;
  // Restores what state() gave; throws distsgd::Error naming an entry that is missing or of another size.
  virtual void load_state(const std::map<std::string, at::Tensor>& saved) = 0;
};

// The optimizer of config.optimizer over a flat buffer of `numel` parameters, with the run's hyperparameters
// (sgd: --momentum, --weight-decay; adamw: --adam-beta1, --adam-beta2, --adam-eps, --weight-decay).
std::unique_ptr<WorkerOptimizer> make_worker_optimizer(const TrainConfig& config, int64_t numel);

}  // namespace distsgd::optim
