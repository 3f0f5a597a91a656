#include "distsgd/train/virtual_run.hpp"

#include "distsgd/algo/algorithm.hpp"
#include "distsgd/catalog/algorithm_catalog.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/core/log.hpp"
#include "distsgd/core/option.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/data/dataset.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/optim/threads.hpp"
#include "distsgd/sim/analytical/prediction.hpp"
#include "distsgd/sim/engine/actor_scheduler.hpp"
#include "distsgd/sim/engine/event_queue.hpp"
#include "distsgd/sim/engine/flow_network.hpp"
#include "distsgd/sim/engine/ring_collectives.hpp"
#include "distsgd/sim/platform/analytical_profile.hpp"
#include "distsgd/sim/platform/busy_delivery_draws.hpp"
#include "distsgd/sim/platform/cluster_description.hpp"
#include "distsgd/sim/platform/cluster_network.hpp"
#include "distsgd/sim/platform/device_description.hpp"
#include "distsgd/sim/platform/model_profile.hpp"
#include "distsgd/sim/platform/start_phases.hpp"
#include "distsgd/sim/simulation.hpp"
#include "distsgd/sim/simulator_settings.hpp"
#include "distsgd/train/memory_estimate.hpp"
#include "distsgd/train/model_cost.hpp"
#include "distsgd/train/options.hpp"
#include "distsgd/train/process.hpp"
#include "distsgd/train/simulator_flags.hpp"
#include "distsgd/train/worker_loop.hpp"
#include "distsgd/vcluster/virtual_communicator.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <vector>

namespace distsgd::train {
namespace {

// The simulator's per-step collective model switches from steps to flows above this many workers (as its DES).
constexpr int64_t kMostWorkersForSteps = 64;

// A step's compute on the profiled device, at this run's batch size (times scale with the batch: the profile's
// figures are per batch of profile.batch_size).
struct StepTimes {
  double data = 0, forward = 0;
  std::vector<double> backward;  // per parameter tensor, forward order
};

StepTimes step_times(const sim::ModelProfile& profile, const TrainConfig& c, int64_t parameter_tensors,
                     int64_t parameters, const std::string& model_name) {
  require(static_cast<int64_t>(profile.tensors.size()) == parameter_tensors,
          "--profile " + c.profile + " is of '" + profile.model + "' (" + std::to_string(profile.tensors.size()) +
              " parameter tensors), but " + model_name + " has " + std::to_string(parameter_tensors) +
              " (profile this model: distsgd profile --model " + c.model + " --out FILE)");
  // The same layers of other sizes (an analytical profile of 1,000 classes for a 10-class dataset) time other work
  // and, in the discrete-event simulator, send other messages.
  int64_t profiled = 0;
  for (const auto& tensor : profile.tensors) profiled += tensor.parameters;
  require(profiled == parameters, "--profile " + c.profile + " has " + std::to_string(profiled) +
                                      " parameters, but this run's " + model_name + " has " +
                                      std::to_string(parameters) +
                                      " (another number of classes or layer sizes: distsgd profile --classes ...)");
  const double scale =
      static_cast<double>(c.batch_size) / static_cast<double>(std::max<int64_t>(profile.batch_size, 1));
  StepTimes t;
  t.data = profile.data_seconds * scale;
  t.forward = profile.forward_seconds() * scale;
  for (const auto& tensor : profile.tensors) t.backward.push_back(tensor.backward_seconds * scale);
  return t;
}

// --profile: a profile file, or a device preset: the model's analytical profile on that device at the run's batch
// size (as distsgd profile --device makes).
sim::ModelProfile virtual_profile(const TrainConfig& c, const data::Dataset& d) {
  const auto devices = sim::device_preset_names();
  if (std::find(devices.begin(), devices.end(), c.profile) == devices.end()) {
    auto profile = sim::load_model_profile(c.profile);
    const std::vector<int64_t> shape{d.channels, d.height, d.width};
    // A profile of other inputs times other work (lenet5 on 3x224x224 costs ~60x its 1x28x28 step).
    require(profile.input_shape.empty() || profile.input_shape == shape,
            "--profile " + c.profile + " was made for " + shape_text(profile.input_shape) + " inputs, this run's are " +
                shape_text(shape) + " (distsgd profile --input-shape " + shape_text(shape) + " ... for this data)");
    return profile;
  }
  const auto cost = count_model_cost(c, {d.channels, d.height, d.width}, d.classes);
  return sim::analytical_profile(cost, sim::load_device(c.profile), c.batch_size);
}

// On a calibrated cluster file the run's virtual time is its best fit's; the clusters that fit the calibration's
// points as well (calibrate --noise) would run faster or slower. The math runs once: the discrete-event simulator's
// samples/s of this configuration on each of those clusters, relative to the best fit's, scale this run's own figures
// into their range (a throughput's range; a time's, the inverse).
nlohmann::json range_over_clusters(const TrainConfig& config, const sim::ModelProfile& measured,
                                   const sim::ClusterDescription& best,
                                   const std::vector<sim::ClusterDescription>& others, const nlohmann::json& summary) {
  std::vector<std::string> words{"--algo", config.algorithm, "--fidelity",
                                 "des",    "--seed",         std::to_string(config.seed)};
  const auto flags = simulator_flags_of_run(config_json(config));
  words.insert(words.end(), flags.begin(), flags.end());
  const auto settings = sim::simulator_settings_from(words);
  const double at_best = sim::des_samples_per_second(settings, measured, best, config.workers);
  double slowest = 1, fastest = 1;                  // relative to the best fit
  nlohmann::json speeds = nlohmann::json::array();  // each cluster's, in the file's order (advise re-ranks on them)
  for (const auto& other : others) {
    const double relative = sim::des_samples_per_second(settings, measured, other, config.workers) / at_best;
    speeds.push_back(relative);
    slowest = std::min(slowest, relative);
    fastest = std::max(fastest, relative);
  }
  const auto rate = [&](const char* key) {
    const auto& value = summary.value(key, nlohmann::json());
    return value.is_number() ? nlohmann::json::array({value.get<double>() * slowest, value.get<double>() * fastest})
                             : nlohmann::json();
  };
  const auto time = [&](const char* key) {
    const auto& value = summary.value(key, nlohmann::json());
    return value.is_number() ? nlohmann::json::array({value.get<double>() / fastest, value.get<double>() / slowest})
                             : nlohmann::json();
  };
  return {{"clusters", others.size() + 1},
          {"relative_speed", {slowest, fastest}},
          {"relative_speeds", speeds},
          {"samples_per_second", rate("samples_per_second")},
          {"virtual_seconds", time("virtual_seconds")},
          {"time_to_target_seconds", time("time_to_target_seconds")}};
}

}  // namespace

nlohmann::json run_virtual_training(TrainConfig config, const TrainHooks& hooks) {
  validate(config);
  if (config.out.empty()) config.out = default_run_dir(config);
  // One compute thread (the profile times the compute, not this CPU), the loader reads synchronously (its thread
  // would race the scheduler), no checkpoints (a virtual run is the same every time: run it again).
  config.threads = 1;
  config.prefetch = 0;
  config.checkpoint_each_epoch = false;
  config.checkpoint_every_steps = 0;
  configure_threads(1, 1);

  const sim::ClusterDescription cluster = sim::load_cluster(config.cluster);
  // A calibrated file's other clusters (calibrate --noise): read now, so that a malformed one stops the run before it
  // trains; after it, the range of its virtual time over them.
  const auto consistent = sim::load_consistent_clusters(config.cluster);
  const data::Dataset dataset = data::load_dataset(dataset_options(config));  // one copy, every worker reads it
  // A calibrated cluster's compute scale and per-iteration overhead apply here as in distsgd simulate.
  const sim::ModelProfile measured_profile = virtual_profile(config, dataset);
  const sim::ModelProfile profile = sim::as_run_on(measured_profile, cluster);

  // One model here first: the profile must fit it, and the memory estimate needs its size.
  StepTimes times;
  int64_t parameters = 0;
  {
    Process probe;
    probe.config = config;
    build_model(probe, dataset);
    parameters = probe.flat->numel();
    times =
        step_times(profile, config, static_cast<int64_t>(probe.flat->slots().size()), parameters, probe.model->name());
  }
  // The workers' optimizer pass, as the DES charges it (BSP's and ASP's workers leave it to the servers, which
  // spend it on each payload: ShardServer::spend_update).
  const auto* entry = catalog::find(config.algorithm);
  const double worker_update_seconds = entry == nullptr || entry->workers_update
                                           ? profile.update_seconds_per_byte * 4.0 * static_cast<double>(parameters)
                                           : 0.0;
  const double needed = virtual_memory_estimate(config, parameters, dataset.channels * dataset.height * dataset.width);
  const double available = available_memory_bytes();
  require(fits_in_memory(needed, available),
          "--virtual: " + std::to_string(config.workers) + " workers and " + std::to_string(config.servers) +
              " servers of " + std::to_string(parameters) + " parameters need about " + gigabytes(needed) +
              ", and this machine has " + gigabytes(available) + " available: use fewer workers or a smaller model");

  const int64_t workers = config.workers, servers = config.servers;
  sim::EventQueue queue;
  sim::FlowNetwork network(queue);
  sim::ClusterNetwork cluster_network(network, cluster, workers, servers, {});
  sim::RingCollectives collectives(
      queue, network, cluster_network, workers, cluster.gamma_seconds_per_byte,
      workers <= kMostWorkersForSteps ? sim::CollectiveModel::kSteps : sim::CollectiveModel::kFlows);
  sim::ActorScheduler scheduler(queue);
  scheduler.set_update_seconds_per_byte(profile.update_seconds_per_byte);  // the servers' passes (ShardServer)
  scheduler.set_server_processing(
      [&cluster](double requests, double bytes) { return sim::server_processing_seconds(cluster, requests, bytes); });
  vcluster::Fabric fabric(scheduler, network, cluster_network, collectives, workers, servers);

  log::info("virtual cluster: " + std::to_string(workers) + " workers" +
            (servers > 0 ? " and " + std::to_string(servers) + " servers" : "") + " on '" + cluster.name + "' (" +
            sim::describe_links(cluster) + "), compute from " + config.profile + " (" + profile.model + ", " +
            text_of(times.forward * 1e3) + " ms forward per batch of " + std::to_string(config.batch_size) + ")");

  std::vector<std::unique_ptr<Process>> processes;
  std::vector<int64_t> actor_of_rank;
  nlohmann::json summary;
  for (int64_t rank = 0; rank < workers + servers; ++rank) {
    processes.push_back(std::make_unique<Process>());
    actor_of_rank.push_back(scheduler.start(role_label(config, rank), [&, rank] {
      configure_threads(1, 1);  // this thread's OpenMP too (its setting is per thread)
      Process& p = *processes[static_cast<size_t>(rank)];
      p.config = config;
      p.rank = rank;
      p.threads = 1;
      build_model(p, dataset);
      p.comm = std::make_unique<vcluster::VirtualCommunicator>(fabric, rank);
      if (!p.is_worker()) {
        run_server(p);
        return;
      }
      p.virtual_data_seconds = times.data;
      p.virtual_forward_seconds = times.forward;
      p.virtual_update_seconds = worker_update_seconds;
      p.virtual_start_seconds = sim::first_iteration_start_seconds(config.algorithm, profile, cluster, rank, workers);
      p.flat->set_virtual_backward_seconds(times.backward);
      auto result = run_worker(p, hooks);
      if (rank == 0) summary = std::move(result);
    }));
  }
  // Collective steps a worker sends to another node while it computes pay the interference, as in the DES.
  if (cluster.interference_alpha_seconds > 0) {
    collectives.set_interference(
        [&](int64_t worker) { return scheduler.computing(actor_of_rank[static_cast<size_t>(worker)]); },
        cluster.interference_alpha_seconds);
  }
  // A busy host's late deliveries (a measured distribution: commbench --busy-delivery), drawn from the run's seed,
  // on the collectives' steps and on every message while the ranks computing take every core, as in the DES (every
  // actor counts: a server's processing runs on its handler threads).
  sim::BusyDeliveryDraws delivery_draws(cluster, workers + servers, static_cast<uint64_t>(config.seed));
  if (delivery_draws.applies()) {
    auto computing = [&] {
      int64_t actors = 0;
      for (int64_t actor = 0; actor < scheduler.actors_started(); ++actor) {
        actors += scheduler.computing_since_before_now(actor) ? 1 : 0;
      }
      return actors;
    };
    auto delay = [&] { return delivery_draws.next(computing()); };
    collectives.set_delivery_delay(delay, [&] { return delivery_draws.mean(computing()); });
    fabric.set_delivery_delay(delay);
  }
  scheduler.run();

  // What was simulated, beside the figures (which are in virtual time already).
  summary["virtual"] = true;
  summary["virtual_cluster"] = sim::to_json(cluster);
  summary["virtual_profile"] = {{"file", config.profile},           {"model", profile.model},
                                {"batch_size", profile.batch_size}, {"data_seconds", times.data},
                                {"forward_seconds", times.forward}, {"update_seconds", worker_update_seconds}};
  summary["virtual_events"] = queue.events_run();
  summary["virtual_seconds"] = queue.now();  // the simulated span of the whole run, evaluations included
  if (!consistent.empty()) {
    try {
      summary["virtual_range"] = range_over_clusters(config, measured_profile, cluster, consistent, summary);
    } catch (const Error& e) {
      // The run is done and its figures stand; only the range is missing (an algorithm the simulator lacks).
      log::info(std::string("virtual cluster: warning: no range over the calibration's clusters: ") + e.what());
    }
  }
  if (summary.contains("virtual_range")) {
    const auto& range = summary["virtual_range"];
    const auto figure = [](const nlohmann::json& value) {
      char text[32];
      std::snprintf(text, sizeof text, "%.3g", value.get<double>());
      return std::string(text);
    };
    std::string line = "virtual cluster: on the " + std::to_string(range["clusters"].get<size_t>()) +
                       " clusters that fit the calibration's points (" + config.cluster +
                       "), the discrete-event simulator runs this configuration " + figure(range["relative_speed"][0]) +
                       "x to " + figure(range["relative_speed"][1]) +
                       "x as fast as on the best fit: " + figure(range["virtual_seconds"][0]) + " to " +
                       figure(range["virtual_seconds"][1]) + " s of virtual time";
    if (range["time_to_target_seconds"].is_array()) {
      line += ", the target reached after " + figure(range["time_to_target_seconds"][0]) + " to " +
              figure(range["time_to_target_seconds"][1]) + " s";
    }
    log::info(line + " (summary.json virtual_range)");
  }
  const auto summary_path = (std::filesystem::path(config.out) / "summary.json").string();
  update_json_file(summary_path, [&](nlohmann::json& s) {
    for (const char* key : {"virtual", "virtual_cluster", "virtual_profile", "virtual_events", "virtual_seconds"})
      s[key] = summary[key];
    if (summary.contains("virtual_range")) s["virtual_range"] = summary["virtual_range"];
  });
  return summary;
}

}  // namespace distsgd::train
