#include "distsgd/algo/allreduce/allreduce_worker.hpp"

#include "distsgd/algo/allreduce/allreduce_options.hpp"
#include "distsgd/algo/comm_trace.hpp"
#include "distsgd/core/timed_phase.hpp"
#include "distsgd/optim/flat_parameters.hpp"

#include <nlohmann/json.hpp>

namespace distsgd::algo::allreduce {

AllreduceWorker::AllreduceWorker(const WorkerSetup& s)
    : config_(s.config),
      comm_(s.comm),
      model_(s.model),
      flat_(s.flat),
      timeline_(s.timeline),
      optimizer_(optim::make_worker_optimizer(s.config, s.flat.numel())),
      workers_(s.comm ? s.comm->workers() : 1),
      rank_(s.comm ? s.comm->rank() : 0) {}

std::vector<Bucket> AllreduceWorker::buckets_from_flags() const {
  constexpr double kMegabyte = 1024.0 * 1024.0;
  return make_buckets(flat_.slots(), static_cast<int64_t>(kFirstBucketMb.of(config_) * kMegabyte),
                      static_cast<int64_t>(kBucketMb.of(config_) * kMegabyte));
}

AlgorithmStats AllreduceWorker::stats() const {
  AlgorithmStats s;
  s.communication_wait_seconds = waiting_.total();
  s.communication_wait_in_forward_seconds = waiting_in_forward_seconds_;
  s.update_seconds = update_time_.total();
  s.bytes_sent = bytes_sent_;
  return s;
}

void AllreduceWorker::add_to_summary(nlohmann::json& summary, const std::vector<nlohmann::json>&) {
  summary["overlap"] = name_of(kOverlap.of(config_));
}

void AllreduceWorker::update(at::Tensor params, at::Tensor grads, double lr, int64_t offset, double divisor) {
  TimedPhase phase(timeline_, "update", update_time_);
  optimizer_->step(params, grads, lr, offset, divisor);
}

void AllreduceWorker::wait(comm::Work& work) {
  if (work.done()) return;
  TimedPhase phase(timeline_, "wait", waiting_);
  work.wait();
}

comm::Work AllreduceWorker::traced(comm::Work work, const std::string& name) {
  return trace_completion(std::move(work), timeline_, name);
}

}  // namespace distsgd::algo::allreduce
