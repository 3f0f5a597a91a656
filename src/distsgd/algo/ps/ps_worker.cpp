#include "distsgd/algo/ps/ps_worker.hpp"

#include "distsgd/algo/allreduce/allreduce_options.hpp"
#include "distsgd/algo/compression/compression_options.hpp"
#include "distsgd/algo/ps/ps_options.hpp"
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

PsWorker::~PsWorker() = default;

std::vector<Bucket> PsWorker::wfbp_buckets() const {
  constexpr double kMegabyte = 1024.0 * 1024.0;
  return make_buckets(setup_.flat.slots(),
                      static_cast<int64_t>(allreduce::kFirstBucketMb.of(setup_.config) * kMegabyte),
                      static_cast<int64_t>(allreduce::kBucketMb.of(setup_.config) * kMegabyte));
}

void PsWorker::enable_push(PushOptions options, GradientPush::Values values) {
  push_ = std::make_unique<GradientPush>(client_, setup_.model, setup_.flat.params(),
                                         options.wfbp ? wfbp_buckets() : std::vector<Bucket>{}, options,
                                         std::move(values), setup_.timeline, waiting_);
}

void PsWorker::before_backward(int64_t step, double lr) {
  if (push_) push_->start(gradient_request(step, lr));
}

std::vector<Reply> PsWorker::push_and_receive(const Request& request, const at::Tensor& payload, at::Tensor& into) {
  TimedPhase phase(setup_.timeline, "push, wait for reply", waiting_);
  client_.send_to_all(request, payload);
  return receive(into);
}

std::vector<Reply> PsWorker::push_and_receive(const Request& request, const compression::SparseGradient& gradient,
                                              at::Tensor& into) {
  TimedPhase phase(setup_.timeline, "push, wait for reply", waiting_);
  client_.send_sparse_to_all(request, gradient);
  return receive(into);
}

std::vector<Reply> PsWorker::receive(at::Tensor& into) {
  at::NoGradGuard no_grad;
  auto replies = client_.receive_from_all(into);
  version_ = replies.at(0).version;
  return replies;
}

void PsWorker::push(const Request& request, const compression::SparseGradient& gradient, bool wait_until_sent) {
  TimedPhase phase(setup_.timeline, "push", waiting_);
  if (wait_until_sent) {
    client_.send_sparse_to_all(request, gradient);
    return;
  }
  // The packed messages live in their sends: only the number in flight is bounded.
  while (static_cast<int64_t>(sparse_in_flight_.size()) >= PushOptions{}.send_buffers) {
    for (auto& w : sparse_in_flight_.front()) w.wait();
    sparse_in_flight_.pop_front();
  }
  sparse_in_flight_.push_back(client_.send_sparse_to_all_async(request, gradient));
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

void PsWorker::finish() {
  {
    TimedPhase phase(setup_.timeline, "drain pushes", waiting_);
    if (push_) push_->drain();
    for (auto& sends : sparse_in_flight_) {
      for (auto& w : sends) w.wait();
    }
    sparse_in_flight_.clear();
  }
  client_.finish();
}

AlgorithmStats PsWorker::stats() const {
  AlgorithmStats s;
  s.communication_wait_seconds = waiting_.total();
  s.update_seconds = update_time_.total();
  s.bytes_sent = client_.bytes_sent();
  return s;
}

void PsWorker::add_to_summary(nlohmann::json& summary, const std::vector<nlohmann::json>& shards) {
  summary["sharding"] = name_of(kSharding.of(setup_.config));
  if (push_) {
    summary["overlap"] = push_->wait_free_backprop() ? "wfbp" : "none";
    summary["pushes_per_step"] = push_->pieces_per_step();
  }
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

void PsWorker::save_state(AlgorithmState& state) {
  WorkerAlgorithm::save_state(state);
  if (dgc_) dgc_->save_state(state);
  state.put_integer("version", version_);
}

void PsWorker::load_state(const AlgorithmState& state) {
  WorkerAlgorithm::load_state(state);
  if (dgc_) dgc_->load_state(state);
  version_ = state.integer("version");
}

}  // namespace distsgd::algo::ps
