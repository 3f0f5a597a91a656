#include "distsgd/train/process.hpp"

#include "distsgd/algo/algorithm.hpp"
#include "distsgd/comm/gloo_communicator.hpp"
#include "distsgd/comm/process_env.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/log.hpp"
#include "distsgd/core/timeline.hpp"
#include "distsgd/data/dataset_cache.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/optim/threads.hpp"
#include "distsgd/train/options.hpp"
#include "distsgd/train/trainer.hpp"

#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <optional>

#include <sys/prctl.h>

namespace distsgd::train {
data::DatasetOptions dataset_options(const TrainConfig& c) {
  data::DatasetOptions o;
  o.name = c.dataset;
  o.dir = c.data_dir;
  o.synthetic_shape = c.synthetic_shape;
  o.synthetic_classes = c.synthetic_classes;
  o.synthetic_train_size = c.synthetic_train_size;
  o.synthetic_test_size = c.synthetic_test_size;
  o.data_file = c.data_file;
  o.context = c.context;
  o.seed = c.seed;
  return o;
}

models::ModelOptions model_options(const TrainConfig& c) {
  models::ModelOptions o;
  o.name = c.model;
  o.mlp_width = c.mlp_width;
  o.mlp_hidden_layers = c.mlp_hidden_layers;
  o.batch_norm = c.batch_norm;
  o.gpt_layers = c.gpt_layers;
  o.gpt_heads = c.gpt_heads;
  o.gpt_dim = c.gpt_dim;
  return o;
}

models::InputSpec input_spec(const data::Dataset& d) { return {d.channels, d.height, d.width, d.classes, d.text}; }

namespace {

std::string server_statistics_key(int64_t server) { return "server-statistics/" + std::to_string(server); }

// "mpirun started 4 processes (OMPI_COMM_WORLD_SIZE=4)".
std::string launcher_started(const comm::ProcessEnv& env) {
  const std::string n = std::to_string(env.world_size);
  return (env.launcher == "env" ? "the launcher" : env.launcher) + " started " + n +
         (env.world_size == 1 ? " process (" : " processes (") + env.size_variable + "=" + n + ")";
}

}  // namespace

Process::Process() = default;
Process::~Process() = default;

std::string role_label(const TrainConfig& c, int64_t rank) {
  return rank < c.workers ? "worker " + std::to_string(rank) : "server " + std::to_string(rank - c.workers);
}

void take_world_size_from_launcher(TrainConfig& c, const comm::ProcessEnv& env, bool workers_given) {
  if (!workers_given) {
    require(env.world_size > c.servers,
            launcher_started(env) + ", which leaves no worker beside --servers " + std::to_string(c.servers));
    c.workers = env.world_size - c.servers;
  }
  check_world_size(c, env);
}

void check_world_size(const TrainConfig& c, const comm::ProcessEnv& env) {
  require(env.world_size == c.processes(), launcher_started(env) + " but --workers " + std::to_string(c.workers) +
                                               " --servers " + std::to_string(c.servers) + " make " +
                                               std::to_string(c.processes()) +
                                               " (without --workers, the launcher's count less --servers is taken)");
}

namespace {

// Every process watches the others (comm/liveness.hpp): a lost process ends the run with a line naming it, under
// any launcher, unless the run goes on without lost workers (--on-worker-loss continue), where worker 0 declares
// them lost and the workers agree on who takes part before each collective.
void watch_the_other_processes(Process& p) {
  constexpr double kShortestSilenceSeconds = 4, kLongestSilenceSeconds = 10;
  const TrainConfig& c = p.config;
  const bool continues = algo::continues_after_worker_loss(c);
  comm::LivenessOptions options;
  // Well inside --timeout: the survivors' waits for the declaration must not time out their other peers.
  // At least 4 s: on a loaded host (load 14 on 2 cores) a beat thread was seen silent for 2 s.
  options.silence_seconds =
      std::min(c.timeout, std::clamp(c.timeout / 3, kShortestSilenceSeconds, kLongestSilenceSeconds));
  options.label = [c](int64_t rank) { return role_label(c, rank); };
  options.survivable = [continues, workers = c.workers](int64_t rank) { return continues && rank < workers; };
  p.comm->start_liveness(std::move(options));
  if (continues) p.comm->agree_on_workers_before_collectives();
}

// The processes of a run on one host share one read-only copy of the dataset (data/dataset_cache.hpp); a server
// takes only its description: it never reads a sample.
data::Dataset dataset_of_process(const Process& p, const std::optional<comm::ProcessEnv>& env) {
  const auto options = dataset_options(p.config);
  const std::string cache = env && env->local_world_size > 1 ? data::dataset_cache_dir() : "";
  return p.is_worker() ? data::load_shared_dataset(options, cache) : data::dataset_description(options, cache);
}

}  // namespace

void build_model(Process& p, data::Dataset dataset) {
  const TrainConfig& config = p.config;
  p.dataset = std::move(dataset);
  at::manual_seed(static_cast<uint64_t>(config.seed));  // the same initial weights in every process
  p.model = models::make_model(model_options(config), input_spec(p.dataset));
  p.flat = std::make_unique<optim::FlatParameters>(*p.model);
  if (config.test_init_spread > 0 && p.is_worker()) {
    // Testing: distinct starting models, so that averaging shows whether it conserves what it must.
    at::NoGradGuard no_grad;
    p.flat->params().add_(config.test_init_spread * static_cast<double>(p.rank));
  }
  p.timeline = std::make_unique<Timeline>(config.trace, p.rank, role_label(config, p.rank));
}

void start_process(Process& p, TrainConfig config) {
  validate(config);
  if (config.out.empty()) {
    // Processes started by distsgd's own launcher share the directory it chose.
    const char* launcher_out = std::getenv("DISTSGD_OUT");
    config.out = launcher_out ? launcher_out : config.resume.empty() ? default_run_dir(config) : config.resume;
  }
  p.config = config;
  const auto env = comm::process_env_from_environment();
  // Under a launcher every process must take part: a process that trained alone would race the others on the run
  // directory.
  if (env) check_world_size(config, *env);
  const bool distributed = config.processes() > 1;
  if (distributed) {
    require(env.has_value(), "a run of " + std::to_string(config.processes()) +
                                 " processes must be started by a launcher (distsgd train, mpirun, srun, torchrun)");
    p.rank = env->rank;
    log::set_prefix(env->launcher == "distsgd" ? "" : "[" + role_label(config, p.rank) + "] ");
    // Under our launcher every rank is a fork of one program: named by its rank, ps, top and a test that stops one
    // rank tell them apart (process ids wrap around, so their order is not the ranks').
    if (env->launcher == "distsgd") ::prctl(PR_SET_NAME, ("distsgd-r" + std::to_string(p.rank)).c_str());
  }
  p.threads = configure_threads(config.threads, env ? env->local_world_size : 1);

  build_model(p, dataset_of_process(p, env));
  if (distributed) {
    p.comm = std::make_unique<comm::GlooCommunicator>(
        *env, config.workers, std::chrono::milliseconds(static_cast<int64_t>(config.timeout * 1000)));
    watch_the_other_processes(p);
  }
}

std::vector<double> sum_over_workers(Process& p, std::vector<double> values) {
  if (!p.comm) return values;
  auto t = at::tensor(values, at::kDouble);
  p.comm->allreduce_sum(t).wait();
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}

std::vector<int64_t> agree_on_workers(Process& p) {
  if (p.comm) p.comm->agree_on_workers();
  return worker_ranks(p);
}

int64_t worker_index(const Process& p) { return p.comm ? p.comm->worker_index() : 0; }
int64_t worker_count(const Process& p) { return p.comm ? p.comm->worker_count() : 1; }
std::vector<int64_t> worker_ranks(const Process& p) {
  return p.comm ? p.comm->worker_ranks() : std::vector<int64_t>{0};
}

nlohmann::json lost_workers(Process& p) {
  nlohmann::json lost = nlohmann::json::array();
  if (!p.comm || !p.comm->liveness()) return lost;
  for (const auto& l : p.comm->liveness()->lost()) lost.push_back({{"worker", l.rank}, {"seconds", l.seconds}});
  return lost;
}

void finish_process(Process& p) {
  if (p.comm && p.comm->liveness()) p.comm->liveness()->finish(p.comm->timeout());
}

std::vector<std::vector<double>> gather_from_workers(Process& p, const std::vector<double>& values) {
  agree_on_workers(p);  // the table's size is the group's
  const int64_t workers = worker_count(p);
  const auto k = static_cast<int64_t>(values.size());
  auto table = at::zeros({workers, k}, at::kDouble);
  table[worker_index(p)].copy_(at::tensor(values, at::kDouble));
  if (p.comm) p.comm->allreduce_sum(table).wait();
  std::vector<std::vector<double>> rows;
  for (int64_t w = 0; w < workers; ++w) {
    rows.emplace_back(table[w].data_ptr<double>(), table[w].data_ptr<double>() + k);
  }
  return rows;
}

void publish_trace(Process& p) {
  if (!p.config.trace) return;
  const auto path = (std::filesystem::path(p.config.out) / "trace.json").string();
  if (!p.comm) {
    write_chrome_trace(path, {p.timeline->events()});
    return;
  }
  p.comm->store_set("trace/" + std::to_string(p.rank), p.timeline->events().dump());
  if (p.rank != 0) return;
  std::vector<nlohmann::json> all;
  for (int64_t r = 0; r < p.comm->world_size(); ++r) {
    if (p.comm->liveness() && p.comm->liveness()->is_lost(r)) continue;  // it died with its events
    all.push_back(nlohmann::json::parse(p.comm->store_get("trace/" + std::to_string(r))));
  }
  write_chrome_trace(path, all);
}

void publish_server_statistics(Process& p, const nlohmann::json& statistics) {
  p.comm->store_set(server_statistics_key(p.rank - p.config.workers), statistics.dump());
}

std::vector<nlohmann::json> collect_server_statistics(Process& p) {
  std::vector<nlohmann::json> all;
  for (int64_t s = 0; s < p.config.servers; ++s) {
    all.push_back(nlohmann::json::parse(p.comm->store_get(server_statistics_key(s))));
  }
  return all;
}

}  // namespace distsgd::train
