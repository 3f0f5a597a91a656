// The algorithm seam. An algorithm is a worker side (hooks into the training step) and, for parameter-server
// algorithms, a server side (handlers over the shared substrate in algo/ps/), registered under one name.
// Adding an algorithm is one new file defining an AlgorithmInfo (with the flags it takes, declared in that file
// as StoredOption), one line in algo/builtin.cpp, and its tests.
#pragma once
#include "distsgd/algo/algorithm_state.hpp"
#include "distsgd/core/config.hpp"
#include "distsgd/core/option.hpp"
#include "distsgd/optim/worker_optimizer.hpp"

#include <ATen/core/Tensor.h>
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace distsgd::comm {
class Communicator;
}
namespace distsgd::models {
class Model;
}
namespace distsgd::optim {
class FlatParameters;
}
namespace distsgd {
class Timeline;
}

namespace distsgd::algo {

// What a worker-side algorithm works on. All references outlive the algorithm.
struct WorkerSetup {
  const TrainConfig& config;
  comm::Communicator* comm;  // null in a single-process run
  models::Model& model;
  optim::FlatParameters& flat;
  Timeline& timeline;
  int64_t steps_per_epoch = 1;  // iterations of each worker per epoch (schedules in epochs, e.g. DGC's warm-up)
};

// Where an iteration's time went, beyond forward and backward (which the loop measures).
struct AlgorithmStats {
  double communication_wait_seconds = 0;  // blocked on communication (exposed, not overlapped)
  // The part of it spent inside the model's forward (forward gates); the loop takes it out of forward time.
  double communication_wait_in_forward_seconds = 0;
  double update_seconds = 0;  // optimizer work on this worker
  int64_t bytes_sent = 0;
  // Extra figures of this worker, listed under its entry of summary.json's per_worker (e.g. a gossip weight).
  // Every worker of a run gives the same names in the same order.
  std::vector<std::pair<std::string, double>> per_worker_values;
};

class WorkerAlgorithm {
 public:
  virtual ~WorkerAlgorithm() = default;
  // Before the forward pass of every iteration (e.g. wait for parameters still being gathered, or leave that to
  // a forward gate, see Model::set_forward_gate).
  virtual void before_forward(int64_t step) {}
  // Before backward: the loop has not yet zeroed gradients; algorithms that overlap communication with
  // backward arm their hooks here (lr: this step's learning rate, for pushes that carry it).
  virtual void before_backward(int64_t step, double lr) {}
  // After backward: combine gradients and update the model. lr is this step's learning rate.
  virtual void after_backward(int64_t step, double lr) = 0;
  // Before an evaluation: make the model hold the parameters to evaluate (e.g. the servers' x~) ...
  virtual void before_evaluation() {}
  // ... and after it: give the worker its own parameters back.
  virtual void after_evaluation() {}
  // After the last training iteration, before the final evaluation: whatever lets the others go on without this
  // worker (SSP: its clock advances no more, so no pull waits for it).
  virtual void end_training() {}
  // After the last iteration: drain communication, release the servers.
  virtual void finish() {}
  virtual AlgorithmStats stats() const = 0;
  // On worker 0, after finish(): the algorithm's own figures in summary.json (e.g. the overlap strategy, the
  // servers' staleness). server_statistics holds what each server's serve() returned, in server order.
  virtual void add_to_summary(nlohmann::json& summary, const std::vector<nlohmann::json>& server_statistics) {}
  // The optimizer this worker steps its own parameters with (--optimizer; optim/worker_optimizer.hpp), for
  // checkpoints; null where the algorithm keeps its own momentum SGD (optimizer_state()).
  virtual optim::WorkerOptimizer* worker_optimizer() { return nullptr; }
  // Optimizer state of this worker (momentum buffer over the flat vector) for checkpoints, when it has no
  // worker_optimizer(); undefined if none.
  virtual at::Tensor optimizer_state() { return {}; }
  // Checkpoints (train/resume.cpp): this worker's state beyond its parameters, buffers, RNG and position, taken
  // at a step boundary (after after_backward) and restored after the algorithm is made and before training goes
  // on. The defaults carry worker_optimizer()'s state (or optimizer_state() as "momentum"); algorithms with more
  // state (DGC accumulators, clocks, push-sum weights) extend them. save_state may first finish communication still
  // in flight (multistep's allgathers), so that the parameters saved beside it are the step's.
  virtual void save_state(AlgorithmState& state) {
    if (auto* optimizer = worker_optimizer()) {
      for (const auto& [name, tensor] : optimizer->state()) state.put(name, tensor);
      return;
    }
    auto momentum = optimizer_state();
    if (momentum.defined()) state.put("momentum", momentum);
  }
  virtual void load_state(const AlgorithmState& state) {
    if (auto* optimizer = worker_optimizer()) return optimizer->load_state(state.tensors());
    auto momentum = optimizer_state();
    if (momentum.defined()) state.copy_to("momentum", momentum);
  }
  // The weight of this worker's model in the workers' average. Push-sum workers (GoSGD, gossip push, SGP) hold
  // z_i = x_i / w_i and estimate the consensus sum_i w_i z_i / sum_i w_i (Kempe et al. 2003; Assran et al. 2019,
  // Algorithm 1): they return w_i; the others 1 (a plain mean).
  virtual double model_weight() const { return 1; }
};

// What a server-side algorithm works on. The server builds the same model as the workers (same seed), so
// `flat` holds the initial parameters and the layout the shards are cut from.
struct ServerSetup {
  const TrainConfig& config;
  comm::Communicator& comm;
  int64_t server_index = 0;  // 0 .. servers-1
  optim::FlatParameters& flat;
  Timeline& timeline;
};

class ServerAlgorithm {
 public:
  virtual ~ServerAlgorithm() = default;
  // Serves the workers until every one of them has finished; returns this server's figures for summary.json.
  virtual nlohmann::json serve() = 0;
  // Checkpoints: the shard (x~ and its version) and the algorithm's server state (momentum, clocks, counters).
  // save_state runs on another thread while serve() goes on (train/ takes it when worker 0 asks through the
  // store), so it takes the locks it needs; load_state runs before serve().
  virtual void save_state(AlgorithmState& state) {}
  virtual void load_state(const AlgorithmState& state) {}
};

using WorkerFactory = std::function<std::unique_ptr<WorkerAlgorithm>(const WorkerSetup&)>;
using ServerFactory = std::function<std::unique_ptr<ServerAlgorithm>(const ServerSetup&)>;

struct AlgorithmInfo {
  std::string name;
  std::string description;
  bool needs_servers = false;  // centralized (parameter server) algorithms
  // The workers' models differ: the trainer evaluates their average (test_accuracy) and worker 0's own model
  // (test_accuracy_worker0), and reports the parameter variance across workers.
  bool decentralized = false;
  // No training step waits for another worker (the asynchronous parameter-server algorithms; GoSGD, gossiping SGD
  // and AD-PSGD, whose peers answer from their own threads), so each worker may stop on its own and none is held
  // by a collective: under --time-budget every worker trains until its own deadline and the run evaluates once, at
  // the end (epoch-end evaluations are collective and would hold the workers together). SGP is not: its step t
  // waits for its in-neighbours' messages of t - overlap.
  bool independent_workers = false;
  // No step waits for every worker, so the run can go on when one is lost (--on-worker-loss continue, the default
  // for these): the servers drop it, gossip peers stop choosing it.
  bool survives_worker_loss = false;
  // Runs in one process only (the reference "sgd").
  bool single_process = false;
  // The worker steps its own parameters through optim::make_worker_optimizer, so any --optimizer works (sgd,
  // AR-SGD, the gossip family, the outer loop's inner steps). False: the update is the server's (the parameter-
  // server family applies momentum SGD at the shards, or its workers' steps are tied to it), and --optimizer adamw
  // is refused.
  bool takes_optimizer = false;
  // The flags this algorithm takes beyond training's own, each declared once where it belongs (its own file, or a
  // family's, e.g. algo/ps/ps_options.hpp). A flag given a value other than its default with an algorithm that
  // does not list it is refused.
  std::vector<const OptionSpec*> options;
  // Rules across this algorithm's settings (e.g. a --momentum-at place it has no use for); null: none.
  std::function<void(const TrainConfig&)> validate;
  WorkerFactory make_worker;
  ServerFactory make_server;  // null for algorithms without servers
};

// The built-in algorithms (algo/builtin.cpp lists them; explicit, so no linker drops a self-registering file).
const std::vector<AlgorithmInfo>& builtin_algorithms();
// Every known algorithm: the built-ins, then those registered. Register before options are parsed (an
// extension's main, or a test); a name already taken is refused.
const std::vector<AlgorithmInfo>& algorithms();
void register_algorithm(AlgorithmInfo info);
const AlgorithmInfo& find_algorithm(const std::string& name);  // throws distsgd::Error listing valid names
std::vector<std::string> registered_algorithm_names();
// Names of the algorithms with a capability, in registry order (for error messages that list them).
std::vector<std::string> algorithm_names_where(const std::function<bool(const AlgorithmInfo&)>& has_capability);
// Every flag some algorithm takes, once, in registry order; each spec's group names the algorithms taking it.
const std::vector<OptionSpec>& algorithm_options();
// The algorithm exists, its process counts fit it, its settings keep their rules and are its own.
void validate_algorithm(const TrainConfig& config);
// --on-worker-loss resolved: true when the run goes on without a lost worker.
bool continues_after_worker_loss(const TrainConfig& config);

}  // namespace distsgd::algo
