// What every parameter-server worker side shares: the client for all shards, the dense gradient uplink
// (ps/gradient_push.hpp: whole shards after backward, or pieces during it under --overlap wfbp; answered, or
// unanswered from a ring of send buffers), evaluation on the servers' x~ (pulled, then the worker's own parameters
// restored), the final kDone, and the figures.
#pragma once
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/algo/ps/gradient_push.hpp"
#include "distsgd/algo/ps/protocol.hpp"
#include "distsgd/core/timer.hpp"

#include <deque>
#include <memory>

namespace distsgd::algo::ps {

class PsWorker : public WorkerAlgorithm {
 public:
  explicit PsWorker(const WorkerSetup& setup);
  ~PsWorker() override;

  // Starts this step's push (wait-free backprop arms its hooks here) when the worker has one.
  void before_backward(int64_t step, double lr) override;
  void before_evaluation() override;
  void after_evaluation() override;
  void finish() override;
  AlgorithmStats stats() const override;
  // Checkpoints: the momentum (optimizer_state()), DGC's accumulators and the servers' version.
  void save_state(AlgorithmState& state) override;
  void load_state(const AlgorithmState& state) override;
  // The sharding, the servers' figures, and their staleness over all shards.
  void add_to_summary(nlohmann::json& summary, const std::vector<nlohmann::json>& server_statistics) override;

 protected:
  // Sets up the dense gradient uplink (call from the derived constructor); `values` says what goes out for each
  // range of the flat vector (see GradientPush::Values). Not with --compress dgc, whose pushes are sparse.
  void enable_push(PushOptions options, GradientPush::Values values);
  // The gradient buckets of --overlap wfbp (--first-bucket-mb, --bucket-mb).
  std::vector<Bucket> wfbp_buckets() const;
  // The header of this step's gradient push (BSP, ASP: a gradient answered with parameters).
  virtual Request gradient_request(int64_t step, double lr) const {
    return {RequestKind::kGradient, step, lr, step, version_};
  }
  GradientPush& gradient_push() { return *push_; }
  bool pushing() const { return push_ != nullptr; }

  // Blocking exchange timed as communication wait; returns every shard's reply.
  std::vector<Reply> push_and_receive(const Request& request, const at::Tensor& payload, at::Tensor& into);
  void push(const Request& request, const at::Tensor& payload);

  // Deep Gradient Compression of the gradient uplink (--compress dgc; null otherwise). compress_gradient()
  // takes this step's selection from the flat gradient (momentum and weight decay included: the server then
  // applies plain SGD); the overloads send it.
  bool compressing() const { return dgc_ != nullptr; }
  compression::SparseGradient compress_gradient(int64_t step);
  std::vector<Reply> push_and_receive(const Request& request, const compression::SparseGradient& gradient,
                                      at::Tensor& into);
  // Unanswered: returns once sent, or without waiting while fewer than PushOptions::send_buffers are in flight.
  void push(const Request& request, const compression::SparseGradient& gradient, bool wait_until_sent = true);

  WorkerSetup setup_;  // a copy: the setup passed to the factory is a temporary
  PsClient client_;
  Stopwatch waiting_;
  Stopwatch update_time_;
  int64_t version_ = 0;  // the servers' version the parameters derive from (shard 0's)

 private:
  std::vector<Reply> receive(at::Tensor& into);  // every shard's reply into `into`; the version from shard 0's

  at::Tensor own_parameters_;  // saved during evaluation
  std::unique_ptr<compression::DgcCompressor> dgc_;
  std::unique_ptr<GradientPush> push_;
  std::deque<std::vector<comm::Work>> sparse_in_flight_;  // unanswered compressed pushes, oldest first
};

}  // namespace distsgd::algo::ps
