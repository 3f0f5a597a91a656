#include "distsgd/algo/ps/ps_worker.hpp"

#include "distsgd/comm/communicator.hpp"
#include "distsgd/train/flat_parameters.hpp"
#include "distsgd/train/timeline.hpp"

#include <torch/torch.h>

namespace distsgd::algo::ps {

PsWorker::PsWorker(const WorkerSetup& setup)
    : setup_(setup),
      client_(*setup.comm, shard_layout(setup.flat.slots(), setup.comm->servers(), setup.config.sharding)) {}

void PsWorker::push_and_receive(const Request& request, const at::Tensor& payload, at::Tensor& into) {
  train::Timeline::Scope span(setup_.timeline, "push, wait for reply");
  waiting_.start();
  client_.send_to_all(request, payload);
  torch::NoGradGuard no_grad;
  const auto replies = client_.receive_from_all(into);
  version_ = replies.at(0).version;
  waiting_.stop();
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
