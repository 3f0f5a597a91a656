// What every process of a run holds (data, model, flat buffers, timeline, and when distributed the
// communicator), how it is started, and the few collectives the worker's jobs share.
#pragma once
#include "distsgd/core/config.hpp"
#include "distsgd/data/dataset.hpp"
#include "distsgd/models/model.hpp"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <vector>

namespace distsgd {
class Timeline;
}
namespace distsgd::comm {
class Communicator;
struct ProcessEnv;
}  // namespace distsgd::comm
namespace distsgd::models {
class Model;
}
namespace distsgd::optim {
class FlatParameters;
}

namespace distsgd::train {

struct Process {
  Process();
  ~Process();
  Process(Process&&) = delete;

  TrainConfig config;  // validated, with its run directory chosen
  int64_t threads = 1;
  data::Dataset dataset;
  std::unique_ptr<models::Model> model;
  std::unique_ptr<optim::FlatParameters> flat;
  std::unique_ptr<Timeline> timeline;
  std::unique_ptr<comm::Communicator> comm;  // declared after timeline: destroyed first (its threads use it)
  int64_t rank = 0;
  // Inside a virtual cluster (virtual_run.hpp): the profile's time for a batch's data and forward pass and for the
  // worker's optimizer pass, spent on the virtual clock (backward's, per parameter, by the flat buffers); zero in a
  // real run.
  double virtual_data_seconds = 0, virtual_forward_seconds = 0, virtual_update_seconds = 0;
  // ... and when its first iteration starts (independent workers start spread: sim/platform/start_phases.hpp).
  double virtual_start_seconds = 0;

  bool is_worker() const { return rank < config.workers; }
  bool leader() const { return rank == 0; }  // worker 0: writes the run directory
};

// A server process: the algorithm's server side until every worker is done; its figures go to worker 0.
void run_server(Process& p);

// Start-up: validates the configuration, joins the launcher's world, loads the data, builds the model (the same
// initial weights in every process) and its flat buffers, and connects to the other processes.
void start_process(Process& p, TrainConfig config);

// The part of start-up every rank shares, real or virtual (p.config and p.rank set): takes `dataset`, builds the
// model (the same initial weights everywhere: the seed), its flat buffers and the timeline.
void build_model(Process& p, data::Dataset dataset);

// Under a launcher (mpirun, srun, torchrun, distsgd's own): without --workers (workers_given false) the workers are
// the processes it started less --servers; either way the counts must agree. Throws Error naming both numbers.
void take_world_size_from_launcher(TrainConfig& config, const comm::ProcessEnv& env, bool workers_given);
void check_world_size(const TrainConfig& config, const comm::ProcessEnv& env);

// "worker 2", "server 0".
std::string role_label(const TrainConfig& config, int64_t rank);

// The dataset and model a run's flags ask for.
data::DatasetOptions dataset_options(const TrainConfig& config);
models::ModelOptions model_options(const TrainConfig& config);
// What the dataset dictates about the model (its input's shape, its classes, whether it holds byte sequences).
models::InputSpec input_spec(const data::Dataset& dataset);

// Sums values over the workers (identity in a single process).
std::vector<double> sum_over_workers(Process& p, std::vector<double> values);
// Every worker's `values` (just `values` in a single process), a row per worker of the current group, in the order
// of worker_ranks(p).
std::vector<std::vector<double>> gather_from_workers(Process& p, const std::vector<double>& values);

// The workers taking part in collectives (all of them, unless some were lost and the run went on without them),
// after agreeing on them with the others (a collective: every worker calls it at the same point).
std::vector<int64_t> agree_on_workers(Process& p);
// This worker's place among them and their number, as agreed last.
int64_t worker_index(const Process& p);
int64_t worker_count(const Process& p);
std::vector<int64_t> worker_ranks(const Process& p);
// Workers lost so far (as known to this process): [{"worker": rank, "seconds": when}], in the order declared.
nlohmann::json lost_workers(Process& p);
// The end of a process that finished normally: the others stop watching it (worker 0 waits until all did).
void finish_process(Process& p);

// Gathers every process's trace events through the store; rank 0 writes trace.json (with --trace).
void publish_trace(Process& p);

// Servers publish what their serve() returned; worker 0 collects them for the run report.
void publish_server_statistics(Process& p, const nlohmann::json& statistics);
std::vector<nlohmann::json> collect_server_statistics(Process& p);

}  // namespace distsgd::train
