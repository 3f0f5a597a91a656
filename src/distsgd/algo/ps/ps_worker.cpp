#include "distsgd/algo/ps/ps_worker.hpp"

#include "distsgd/comm/communicator.hpp"
#include "distsgd/train/flat_parameters.hpp"
#include "distsgd/train/timeline.hpp"

#include <torch/torch.h>

namespace distsgd::algo::ps {

PsWorker::PsWorker(const WorkerSetup& setup)
    : setup_(setup),
      client_(*setup.comm, shard_layout(setup.flat.slots(), setup.comm->servers(), setup.config.sharding)) {
  if (setup.config.compress == "dgc") dgc_ = std::make_unique<compression::DgcCompressor>(
      setup.flat.slots(), compression::dgc_options(setup.config, setup.steps_per_epoch));
}

void PsWorker::push_and_receive(const Request& request, const at::Tensor& payload, at::Tensor& into) {
  train::Timeline::Scope span(setup_.timeline, "push, wait for reply");
  waiting_.start();
  client_.send_to_all(request, payload);
  receive(into);
  waiting_.stop();
}

void PsWorker::push_and_receive(const Request& request, const compression::SparseGradient& gradient,
                                at::Tensor& into) {
  train::Timeline::Scope span(setup_.timeline, "push, wait for reply");
  waiting_.start();
  client_.send_sparse_to_all(request, gradient);
  receive(into);
  waiting_.stop();
}

void PsWorker::receive(at::Tensor& into) {
  torch::NoGradGuard no_grad;
  const auto replies = client_.receive_from_all(into);
  version_ = replies.at(0).version;
}

void PsWorker::push(const Request& request, const compression::SparseGradient& gradient) {
  train::Timeline::Scope span(setup_.timeline, "push");
  waiting_.start();
  client_.send_sparse_to_all(request, gradient);
  waiting_.stop();
}

compression::SparseGradient PsWorker::compress_gradient(int64_t step) {
  train::Timeline::Scope span(setup_.timeline, "compress");
  update_time_.start();
  auto sparse = dgc_->compress(setup_.flat.grads(), setup_.flat.params(), dgc_->density_at(step));
  update_time_.stop();
  return sparse;
}

void PsWorker::push(const Request& request, const at::Tensor& payload) {
  train::Timeline::Scope span(setup_.timeline, "push");
  waiting_.start();
  client_.send_to_all(request, payload);
  waiting_.stop();
}

void PsWorker::before_evaluation() {
  torch::NoGradGuard no_grad;
  own_parameters_ = setup_.flat.params().clone();
  client_.pull_all(setup_.flat.params());
}

void PsWorker::after_evaluation() {
  torch::NoGradGuard no_grad;
  setup_.flat.params().copy_(own_parameters_);
}

void PsWorker::finish() { client_.send_to_all({RequestKind::kDone, 0, 0, 0, 0}, at::Tensor()); }

AlgorithmStats PsWorker::stats() const {
  AlgorithmStats s;
  s.communication_wait_seconds = waiting_.total();
  s.update_seconds = update_time_.total();
  s.bytes_sent = client_.bytes_sent();
  return s;
}

}  // namespace distsgd::algo::ps
