#include "distsgd/algo/ps/ps_worker.hpp"

#include "distsgd/algo/compression/compression_options.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/timed_phase.hpp"
#include "distsgd/core/timeline.hpp"
#include "distsgd/optim/flat_parameters.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <nlohmann/json.hpp>

namespace distsgd::algo::ps {

PsWorker::PsWorker(const WorkerSetup& setup)
    : setup_(setup),
      client_(*setup.comm, shard_layout(setup.flat.slots(), setup.comm->servers(), kSharding.of(setup.config))) {
  if (compression::dgc_enabled(setup.config)) {
    dgc_ = std::make_unique<compression::DgcCompressor>(setup.flat.slots(),
                                                        compression::dgc_options(setup.config, setup.steps_per_epoch));
  }
}

void PsWorker::push_and_receive(const Request& request, const at::Tensor& payload, at::Tensor& into) {
  TimedPhase phase(setup_.timeline, "push, wait for reply", waiting_);
  client_.send_to_all(request, payload);
  receive(into);
}

void PsWorker::push_and_receive(const Request& request, const compression::SparseGradient& gradient, at::Tensor& into) {
  TimedPhase phase(setup_.timeline, "push, wait for reply", waiting_);
  client_.send_sparse_to_all(request, gradient);
  receive(into);
}

void PsWorker::receive(at::Tensor& into) {
  at::NoGradGuard no_grad;
  const auto replies = client_.receive_from_all(into);
  version_ = replies.at(0).version;
}

void PsWorker::push(const Request& request, const compression::SparseGradient& gradient) {
  TimedPhase phase(setup_.timeline, "push", waiting_);
  client_.send_sparse_to_all(request, gradient);
}

compression::SparseGradient PsWorker::compress_gradient(int64_t step) {
  TimedPhase phase(setup_.timeline, "compress", update_time_);
  auto sparse = dgc_->compress(setup_.flat.grads(), setup_.flat.params(), dgc_->density_at(step));
  return sparse;
}

void PsWorker::push(const Request& request, const at::Tensor& payload) {
  TimedPhase phase(setup_.timeline, "push", waiting_);
  client_.send_to_all(request, payload);
}

void PsWorker::before_evaluation() {
  at::NoGradGuard no_grad;
  own_parameters_ = setup_.flat.params().clone();
  client_.pull_all(setup_.flat.params());
}

void PsWorker::after_evaluation() {
  at::NoGradGuard no_grad;
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

void PsWorker::add_to_summary(nlohmann::json& summary, const std::vector<nlohmann::json>& shards) {
  summary["sharding"] = name_of(kSharding.of(setup_.config));
  double staleness_sum = 0;
  int64_t staleness_max = 0;
  for (const auto& shard : shards) {
    staleness_sum += shard["staleness_mean"].get<double>();
    staleness_max = std::max(staleness_max, shard["staleness_max"].get<int64_t>());
  }
  summary["staleness_mean"] = shards.empty() ? 0.0 : staleness_sum / static_cast<double>(shards.size());
  summary["staleness_max"] = staleness_max;
  summary["server_statistics"] = shards;
}

}  // namespace distsgd::algo::ps
