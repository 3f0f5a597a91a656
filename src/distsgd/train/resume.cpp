#include "distsgd/train/resume.hpp"

#include "distsgd/core/error.hpp"
#include "distsgd/core/log.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/optim/flat_parameters.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/zeros.h>

namespace distsgd::train {

void restore_from_checkpoint(WorkerState& s) {
  Process& p = s.p;
  Checkpoint ckpt = load_checkpoint(s.c.resume);
  require(ckpt.model == p.model->name() && ckpt.params.numel() == p.flat->numel(),
          "--resume: checkpoint in " + s.c.resume + " is of model '" + ckpt.model + "' with " +
              std::to_string(ckpt.params.numel()) + " parameters, not '" + p.model->name() + "' with " +
              std::to_string(p.flat->numel()));
  auto buffers = p.model->buffers();
  require(buffers.size() == ckpt.buffers.size(), "--resume: checkpoint buffers do not match the model");
  at::NoGradGuard no_grad;
  p.flat->params().copy_(ckpt.params);
  auto momentum = s.algorithm->optimizer_state();
  if (momentum.defined()) momentum.copy_(ckpt.momentum);
  for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(ckpt.buffers[i]);
  set_cpu_rng_state(ckpt.rng_state);
  s.position = ckpt.position;
  log::info("resuming from " + s.c.resume + " at epoch " + std::to_string(s.position.epoch + 1) + ", step " +
            std::to_string(s.position.step_in_epoch));
}

void save_checkpoint_now(WorkerState& s) {
  if (s.p.comm) return;  // distributed optimizer state is not checkpointed yet
  s.position.wall_seconds = s.wall_now();
  Checkpoint ckpt;
  ckpt.position = s.position;
  ckpt.params = s.p.flat->params();
  ckpt.momentum = s.algorithm->optimizer_state();
  if (!ckpt.momentum.defined()) ckpt.momentum = at::zeros({s.p.flat->numel()});
  ckpt.buffers = s.p.model->buffers();
  ckpt.rng_state = cpu_rng_state();
  ckpt.model = s.p.model->name();
  save_checkpoint(checkpoint_path(s.c.out), ckpt);
}

}  // namespace distsgd::train
