#include "distsgd/optim/worker_optimizer.hpp"

#include "distsgd/core/config.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/optim/adamw.hpp"
#include "distsgd/optim/sgd.hpp"

#include <ATen/core/grad_mode.h>

namespace distsgd::optim {
namespace {

const at::Tensor& saved_entry(const std::map<std::string, at::Tensor>& saved, const std::string& name, int64_t numel) {
  const auto it = saved.find(name);
  require(it != saved.end(),
          "the checkpoint holds no '" + name + "' (written with another --optimizer, algorithm or configuration)");
  require(numel < 0 || it->second.numel() == numel, "the checkpoint's '" + name + "' has " +
                                                        std::to_string(it->second.numel()) + " elements, this run's " +
                                                        std::to_string(numel));
  return it->second;
}

void copy_saved(const std::map<std::string, at::Tensor>& saved, const std::string& name, at::Tensor into) {
  const at::Tensor& value = saved_entry(saved, name, into.numel());
  at::NoGradGuard no_grad;
  into.copy_(value.view(into.sizes()));
}

class SgdWorkerOptimizer final : public WorkerOptimizer {
 public:
  SgdWorkerOptimizer(int64_t numel, double momentum, double weight_decay) : sgd_(numel, momentum, weight_decay) {}

  void step(at::Tensor params, at::Tensor grads, double lr, int64_t offset, double divide_grads_by) override {
    sgd_.step(std::move(params), std::move(grads), lr, offset, {divide_grads_by});
  }
  std::string name() const override { return "sgd"; }
  // "momentum", as checkpoints of momentum SGD always named it.
  std::map<std::string, at::Tensor> state() override { return {{"momentum", sgd_.momentum_buffer()}}; }
  void load_state(const std::map<std::string, at::Tensor>& saved) override {
    copy_saved(saved, "momentum", sgd_.momentum_buffer());
  }

 private:
  MomentumSgd sgd_;
};

class AdamWWorkerOptimizer final : public WorkerOptimizer {
 public:
  AdamWWorkerOptimizer(int64_t numel, AdamWOptions options) : adamw_(numel, options) {}

  void step(at::Tensor params, at::Tensor grads, double lr, int64_t offset, double divide_grads_by) override {
    adamw_.step(std::move(params), std::move(grads), lr, offset, divide_grads_by);
  }
  std::string name() const override { return "adamw"; }
  std::map<std::string, at::Tensor> state() override {
    return {{"adamw_exp_avg", adamw_.exp_avg()},
            {"adamw_exp_avg_sq", adamw_.exp_avg_sq()},
            {"adamw_steps", adamw_.step_counts()}};
  }
  void load_state(const std::map<std::string, at::Tensor>& saved) override {
    copy_saved(saved, "adamw_exp_avg", adamw_.exp_avg());
    copy_saved(saved, "adamw_exp_avg_sq", adamw_.exp_avg_sq());
    adamw_.set_step_counts(saved_entry(saved, "adamw_steps", -1));
  }

 private:
  AdamW adamw_;
};

}  // namespace

std::unique_ptr<WorkerOptimizer> make_worker_optimizer(const TrainConfig& config, int64_t numel) {
  switch (config.optimizer) {
    case Optimizer::kSgd:
      return std::make_unique<SgdWorkerOptimizer>(numel, config.momentum, config.weight_decay);
    case Optimizer::kAdamW: {
      AdamWOptions options;
      options.beta1 = config.adam_beta1;
      options.beta2 = config.adam_beta2;
      options.eps = config.adam_eps;
      options.weight_decay = config.weight_decay;
      return std::make_unique<AdamWWorkerOptimizer>(numel, options);
    }
  }
  throw Error("unknown --optimizer");
}

}  // namespace distsgd::optim
