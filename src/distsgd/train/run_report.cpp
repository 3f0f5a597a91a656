#include "distsgd/train/run_report.hpp"

#include "distsgd/models/model.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/train/evaluate.hpp"

namespace distsgd::train {
namespace {

const std::vector<std::string> kPhases{"data_wait", "forward", "backward", "communication_wait", "update", "slowdown"};

// This worker's figures, in the order report_run reads them back from every worker's row.
struct Row {
  static constexpr size_t kBytes = 6, kSteps = 7, kTrainSeconds = 8, kCpuSeconds = 9, kThreadCpuSeconds = 10,
                          kProcessCpuAtWarmup = 11, kThreadCpuAtWarmup = 12, kAlgorithmValues = 13;
};

// The CPU per iteration after the warm-up iterations, split into the training thread's and the rest of the process
// (communication, loader and keep-alive threads): null where the run was not longer than its warm-up.
nlohmann::json cpu_after_warmup(const std::vector<double>& row) {
  const double iterations = row[Row::kSteps] - static_cast<double>(WorkerState::kCpuWarmupIterations);
  if (row[Row::kProcessCpuAtWarmup] < 0 || iterations < 1) return nullptr;
  const double process = (row[Row::kCpuSeconds] - row[Row::kProcessCpuAtWarmup]) / iterations;
  const double thread = (row[Row::kThreadCpuSeconds] - row[Row::kThreadCpuAtWarmup]) / iterations;
  return {{"iterations", iterations},
          {"process_seconds_per_iteration", process},
          {"training_thread_seconds_per_iteration", thread},
          {"other_threads_seconds_per_iteration", process - thread}};
}

// The workers' mean of each figure of cpu_after_warmup (null unless every worker has them).
nlohmann::json mean_cpu_after_warmup(const nlohmann::json& per_worker) {
  nlohmann::json mean = nlohmann::json::object();
  for (const auto& worker : per_worker) {
    const auto it = worker.find("cpu_after_warmup");
    if (it == worker.end() || it->is_null()) return nullptr;
    for (const auto& [name, value] : it->items()) {
      mean[name] = mean.value(name, 0.0) + value.get<double>() / static_cast<double>(per_worker.size());
    }
  }
  return per_worker.empty() ? nlohmann::json() : mean;
}

std::vector<double> own_row(WorkerState& s, const algo::AlgorithmStats& stats) {
  const double steps = static_cast<double>(s.position.global_step - s.steps_before);
  // Communication waited for inside forward (forward gates) counts as communication, not as forward.
  const double forward_compute = s.forward.total() - stats.communication_wait_in_forward_seconds;
  const double train_seconds_this_run = s.position.train_seconds - s.train_seconds_before;
  std::vector<double> row{s.data_wait.total(),
                          forward_compute,
                          s.backward.total(),
                          stats.communication_wait_seconds,
                          stats.update_seconds,
                          s.slowdown.total(),
                          static_cast<double>(stats.bytes_sent),
                          steps,
                          train_seconds_this_run,
                          s.train_cpu.total(),
                          s.train_cpu.thread_total(),
                          s.process_cpu_at_warmup,
                          s.thread_cpu_at_warmup};
  for (const auto& [name, value] : stats.per_worker_values) row.push_back(value);
  return row;
}

}  // namespace

nlohmann::json report_run(WorkerState& s) {
  const auto stats = s.algorithm->stats();
  // Every worker's own figures (stragglers show here), and their mean.
  const auto rows = gather_from_workers(s.p, own_row(s, stats));
  const auto ranks = worker_ranks(s.p);
  // The gather is a collective: every worker has stopped training, so every divergence is on record.
  const auto divergence = s.divergence.first_of_all();
  if (divergence) s.stop_reason = "diverged";
  nlohmann::json per_worker = nlohmann::json::array();
  nlohmann::json mean_per_iteration = nlohmann::json::object();
  for (const auto& phase : kPhases) mean_per_iteration[phase] = 0.0;
  double mean_bytes = 0, mean_cpu = 0;
  // In a virtual cluster every rank is a thread of one process: its CPU is not any rank's.
  const bool own_process = !s.c.virtual_cluster;
  // Cluster throughput: the sum of every worker's own rate. Synchronous workers share one rate; independent
  // workers (asynchronous algorithms, a straggler) each contribute what they did in their own time.
  double samples_per_second = 0, total_samples = 0;
  const double workers = static_cast<double>(rows.size());
  for (size_t w = 0; w < rows.size(); ++w) {
    const auto& row = rows[w];
    const double iterations = std::max(1.0, row[Row::kSteps]);
    const double samples = row[Row::kSteps] * static_cast<double>(s.c.batch_size);
    const double rate = row[Row::kTrainSeconds] > 0 ? samples / row[Row::kTrainSeconds] : 0.0;
    samples_per_second += rate;
    total_samples += samples;
    nlohmann::json seconds;
    for (size_t k = 0; k < kPhases.size(); ++k) {
      seconds[kPhases[k]] = row[k] / iterations;
      mean_per_iteration[kPhases[k]] = mean_per_iteration[kPhases[k]].get<double>() + row[k] / iterations / workers;
    }
    nlohmann::json entry = {{"worker", ranks[w]},
                            {"steps", row[Row::kSteps]},
                            {"samples_per_second", rate},
                            {"seconds_per_iteration", seconds},
                            {"bytes_sent", row[Row::kBytes]}};
    if (own_process) {
      // Beside the wall-time phases: what the worker's process computed, and its communication threads' work.
      entry["cpu_seconds_per_iteration"] = row[Row::kCpuSeconds] / iterations;
      entry["cpu_after_warmup"] = cpu_after_warmup(row);
      mean_cpu += row[Row::kCpuSeconds] / iterations / workers;
    }
    for (size_t k = 0; k < stats.per_worker_values.size(); ++k) {
      entry[stats.per_worker_values[k].first] = row[Row::kAlgorithmValues + k];
    }
    per_worker.push_back(entry);
    mean_bytes += row[Row::kBytes] / workers;
  }
  const auto& position = s.position;
  nlohmann::json summary = nlohmann::json::object();
  add_test_figures(summary, s.last_eval, s.p.dataset.text);
  summary.update({
      {"samples_per_second", samples_per_second},
      {"samples_trained", total_samples},  // by all workers in this run
      {"wall_seconds", s.wall_now()},
      {"train_seconds", position.train_seconds},
      {"epochs", static_cast<double>(position.global_step) / static_cast<double>(s.steps_per_epoch)},
      {"steps", position.global_step},
      {"samples", position.samples},
      {"stop_reason", s.stop_reason},
      {"time_to_target_seconds", s.time_to_target >= 0 ? nlohmann::json(s.time_to_target) : nlohmann::json()},
      {"model", s.p.model->name()},
      {"dataset", s.p.dataset.name},
      {"parameters", s.p.flat->numel()},
      {"algorithm", s.c.algorithm},
      {"workers", s.c.workers},
      {"servers", s.c.servers},
      {"batch_size", s.c.batch_size},
      {"global_batch", s.c.global_batch()},
      {"threads", s.p.threads},
      {"seconds_per_iteration", mean_per_iteration},
      {"bytes_sent_per_worker", mean_bytes},
      {"cpu_seconds_per_iteration", own_process ? nlohmann::json(mean_cpu) : nlohmann::json()},
      {"cpu_after_warmup", own_process ? mean_cpu_after_warmup(per_worker) : nlohmann::json()},
      {"per_worker", per_worker},
      {"lost_workers", lost_workers(s.p)},
      {"out", s.c.out},
  });
  // The algorithm's own figures; servers published theirs when their last worker was done (after finish()).
  if (s.leader()) s.algorithm->add_to_summary(summary, collect_server_statistics(s.p));
  if (s.p.comm) summary["parameter_variance"] = s.parameter_variance;
  if (divergence) {
    summary["divergence"] = divergence_json(*divergence);
    summary["divergence"]["message"] = divergence_message(s.c.algorithm, *divergence);
  }
  if (s.info.decentralized) {
    add_test_figures(summary, s.worker0_eval, s.p.dataset.text, "_worker0");
    summary["average_parameter_sum"] = s.average_parameter_sum;
  }
  publish_trace(s.p);
  if (s.leader()) s.files->write_summary(summary);
  return summary;
}

}  // namespace distsgd::train
