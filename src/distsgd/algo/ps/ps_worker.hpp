// What every parameter-server worker side shares: the client for all shards, evaluation on the servers' x~
// (pulled, then the worker's own parameters restored), the final kDone, and the figures.
#pragma once
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/algo/ps/protocol.hpp"
#include "distsgd/core/timer.hpp"

#include <memory>

namespace distsgd::algo::ps {

class PsWorker : public WorkerAlgorithm {
 public:
  explicit PsWorker(const WorkerSetup& setup);

  void before_evaluation() override;
  void after_evaluation() override;
  void finish() override;
  AlgorithmStats stats() const override;
  // The sharding, the servers' figures, and their staleness over all shards.
  void add_to_summary(nlohmann::json& summary, const std::vector<nlohmann::json>& server_statistics) override;

 protected:
  // Blocking exchange timed as communication wait.
  void push_and_receive(const Request& request, const at::Tensor& payload, at::Tensor& into);
  void push(const Request& request, const at::Tensor& payload);

  // Deep Gradient Compression of the gradient uplink (--compress dgc; null otherwise). compress_gradient()
  // takes this step's selection from the flat gradient (momentum and weight decay included: the server then
  // applies plain SGD); the overloads send it.
  bool compressing() const { return dgc_ != nullptr; }
  compression::SparseGradient compress_gradient(int64_t step);
  void push_and_receive(const Request& request, const compression::SparseGradient& gradient, at::Tensor& into);
  void push(const Request& request, const compression::SparseGradient& gradient);

  WorkerSetup setup_;  // a copy: the setup passed to the factory is a temporary
  PsClient client_;
  Stopwatch waiting_;
  Stopwatch update_time_;
  int64_t version_ = 0;  // the servers' version the parameters derive from (shard 0's)

 private:
  void receive(at::Tensor& into);  // every shard's reply into `into`; the version from shard 0's

  at::Tensor own_parameters_;  // saved during evaluation
  std::unique_ptr<compression::DgcCompressor> dgc_;
};

}  // namespace distsgd::algo::ps
