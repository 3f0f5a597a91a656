// What the three AR-SGD variants share (spec: "AR-SGD"): the optimizer step every worker takes identically,
// timed updates and waits, the bytes sent, and the figures. Each variant is its own class, picked when the worker
// is made (algorithm.cpp): whole_gradient (--overlap none), bucketed (wfbp), multistep.
#pragma once
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/algo/allreduce/gradient_buckets.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/timer.hpp"
#include "distsgd/optim/worker_optimizer.hpp"

#include <memory>
#include <string>

namespace distsgd::algo::allreduce {

class AllreduceWorker : public WorkerAlgorithm {
 public:
  explicit AllreduceWorker(const WorkerSetup& setup);

  AlgorithmStats stats() const override;
  optim::WorkerOptimizer* worker_optimizer() override { return optimizer_.get(); }
  void add_to_summary(nlohmann::json& summary, const std::vector<nlohmann::json>& server_statistics) override;

 protected:
  // The optimizer step on params[offset, offset + n), timed as update; grads are divided by `divisor` in the same
  // pass (a sum over the workers -> their mean).
  void update(at::Tensor params, at::Tensor grads, double lr, int64_t offset, double divisor = 1);
  // Waits for a collective, timed as communication wait (nothing when it is already done).
  void wait(comm::Work& work);
  // Puts the collective on the timeline from launch to completion.
  comm::Work traced(comm::Work work, const std::string& name);
  // The gradient buckets --first-bucket-mb and --bucket-mb describe (wfbp and multistep).
  std::vector<Bucket> buckets_from_flags() const;
  // Fraction of a message each worker sends in a reduce-scatter or allgather ((n-1)/n; twice that for a ring
  // allreduce).
  double share() const { return static_cast<double>(workers_ - 1) / static_cast<double>(workers_); }

  const TrainConfig& config_;
  comm::Communicator* comm_;
  models::Model& model_;
  optim::FlatParameters& flat_;
  Timeline& timeline_;
  std::unique_ptr<optim::WorkerOptimizer> optimizer_;  // --optimizer
  int64_t workers_, rank_;
  Stopwatch waiting_, update_time_;
  double waiting_in_forward_seconds_ = 0;  // the part of waiting_ spent inside forward gates
  int64_t bytes_sent_ = 0;
};

std::unique_ptr<WorkerAlgorithm> make_whole_gradient_allreduce(const WorkerSetup& setup);
std::unique_ptr<WorkerAlgorithm> make_bucketed_allreduce(const WorkerSetup& setup);
std::unique_ptr<WorkerAlgorithm> make_multistep_allreduce(const WorkerSetup& setup);
// --compress powersgd (powersgd_allreduce.cpp).
std::unique_ptr<WorkerAlgorithm> make_powersgd_allreduce(const WorkerSetup& setup);

}  // namespace distsgd::algo::allreduce
