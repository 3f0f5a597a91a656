// One algorithm's behaviour in the discrete-event simulator, hooked into the worker loop the way the real algorithm
// hooks into distsgd's training step (algo/algorithm.hpp: before_forward, before_backward, after_backward, and AR-SGD's
// gradient-ready hooks and forward gates). Each hook gets the continuation to call when the real code would return. One
// workload file per algorithm family: des_allreduce_workload, des_ps_workloads, des_decentralized_workloads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "distsgd/sim/analytical/bucket_layout.hpp"
#include "distsgd/sim/analytical/outer_model.hpp"
#include "distsgd/sim/des/context.hpp"

namespace distsgd::sim {

class Workload {
 public:
  virtual ~Workload() = default;

  // Buckets whose backward ends are reported to bucket_ready (wfbp, multistep); null: backward is one task.
  virtual const BucketLayout* watched_buckets() const { return nullptr; }
  // Whether forward runs bucket by bucket through forward_gate (multistep's allgathers).
  virtual bool gates_forward() const { return false; }

  virtual void before_forward(int64_t worker, int64_t step, Next next) { next(); }
  virtual void forward_gate(int64_t worker, size_t bucket, Next next) { next(); }
  virtual void before_backward(int64_t worker, int64_t step, Next next) { next(); }
  // During backward, in bucket order, when bucket b's gradients are all computed.
  virtual void bucket_ready(int64_t worker, int64_t step, size_t bucket) {}
  virtual void after_backward(int64_t worker, int64_t step, Next next) = 0;
  // The worker has run its last iteration (SSP retires it, so it never holds the others' pulls).
  virtual void worker_finished(int64_t worker) {}
};

std::unique_ptr<Workload> make_allreduce_workload(DesContext& context);
std::unique_ptr<Workload> make_parameter_server_workload(DesContext& context);
std::unique_ptr<Workload> make_decentralized_workload(DesContext& context);
std::unique_ptr<Workload> make_outer_workload(DesContext& context);
// SGP's push-sum gossip without overlap, whatever the context's algorithm: the base of slowmo --base sgp.
std::unique_ptr<Workload> make_sgp_gossip_workload(DesContext& context);

// The outer loop's settings of a simulation (des_outer_workload.cpp): what distsgd train gives the algorithm.
OuterLoopSettings outer_loop_settings(const DesSettings& settings);

}  // namespace distsgd::sim
