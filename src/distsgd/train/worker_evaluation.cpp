#include "distsgd/train/worker_evaluation.hpp"

#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/log.hpp"
#include "distsgd/models/model.hpp"
#include "distsgd/optim/flat_parameters.hpp"

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <iomanip>
#include <sstream>

namespace distsgd::train {
namespace {

// Evaluates the model's current parameters: each worker takes its share of the test set, the sums are allreduced.
Evaluation evaluate_current_parameters(WorkerState& s) {
  Process& p = s.p;
  auto buffers = p.model->buffers();
  if (p.comm && !buffers.empty()) {
    // BatchNorm statistics differ between workers; evaluate with worker 0's, as DDP does.
    for (auto& b : buffers) p.comm->broadcast(b, 0).wait();
  }
  const auto& test = p.dataset.test;
  const int64_t workers = worker_count(p), index = worker_index(p), n = test.size();
  const int64_t begin = n * index / workers, end = n * (index + 1) / workers;
  data::Split part{test.images.narrow(0, begin, end - begin), test.labels.narrow(0, begin, end - begin)};
  Evaluation mine = evaluate(*p.model, p.dataset, part, s.c.eval_batch_size);
  auto sums =
      sum_over_workers(p, {mine.loss * static_cast<double>(mine.samples),
                           mine.accuracy * static_cast<double>(mine.samples), static_cast<double>(mine.samples)});
  Evaluation all;
  all.samples = static_cast<int64_t>(sums[2]);
  all.loss = sums[0] / std::max(1.0, sums[2]);
  all.accuracy = sums[1] / std::max(1.0, sums[2]);
  return all;
}

// sum_i w_i x_i / sum_i w_i over the workers, each giving its own model x_i and weight w_i.
at::Tensor weighted_mean_across_workers(WorkerState& s, const at::Tensor& own, double weight) {
  at::NoGradGuard no_grad;
  at::Tensor mean = own * weight;
  s.p.comm->allreduce_sum(mean).wait();
  return mean.div_(sum_over_workers(s.p, {weight})[0]);
}

// Mean over workers of ||x_i - mean||^2.
double variance_across_workers(WorkerState& s, const at::Tensor& own, const at::Tensor& mean) {
  at::NoGradGuard no_grad;
  const double squared_distance = (own - mean).pow(2).sum(at::kDouble).item<double>();
  return sum_over_workers(s.p, {squared_distance})[0] / static_cast<double>(worker_count(s.p));
}

double variance_around_plain_mean(WorkerState& s, const at::Tensor& own) {
  at::NoGradGuard no_grad;
  at::Tensor mean = own.clone();
  s.p.comm->allreduce_sum(mean).wait();
  return variance_across_workers(s, own, mean.div_(static_cast<double>(worker_count(s.p))));
}

// The workers hold one model (or the servers do): evaluate it.
Evaluation evaluate_shared_model(WorkerState& s) {
  // Measured on the workers' own parameters: for parameter-server algorithms before before_evaluation() puts
  // in x~, for the others after it has completed what was in flight (multistep's allgathers).
  const bool swaps_in_server_model = s.info.needs_servers;
  if (s.p.comm && swaps_in_server_model) s.parameter_variance = variance_around_plain_mean(s, s.p.flat->params());
  s.algorithm->before_evaluation();
  if (s.p.comm && !swaps_in_server_model) s.parameter_variance = variance_around_plain_mean(s, s.p.flat->params());
  Evaluation e = evaluate_current_parameters(s);
  s.algorithm->after_evaluation();
  return e;
}

// Decentralized: the workers' models differ. Evaluate their average (weighted by the push-sum weights, which is
// the model push-sum converges to), then worker 0's own model, and put every worker's own model back. Only this
// evaluation stops the workers (their gossip threads keep serving).
Evaluation evaluate_average_and_worker0(WorkerState& s) {
  s.algorithm->before_evaluation();
  at::NoGradGuard no_grad;
  auto& params = s.p.flat->params();
  const auto own = params.detach().clone();
  const at::Tensor mean = weighted_mean_across_workers(s, own, s.algorithm->model_weight());
  s.parameter_variance = variance_across_workers(s, own, mean);
  s.average_parameter_sum = mean.sum(at::kDouble).item<double>();
  params.detach().copy_(mean);
  Evaluation average = evaluate_current_parameters(s);
  params.detach().copy_(own);
  s.p.comm->broadcast(params.detach(), 0).wait();
  s.worker0_eval = evaluate_current_parameters(s);
  params.detach().copy_(own);
  s.algorithm->after_evaluation();
  return average;
}

void log_evaluation(const WorkerState& s, double epoch, double train_loss) {
  // A classifier's headline is its accuracy, a language model's its bits per byte.
  const bool text = s.p.dataset.text;
  const auto headline = [text](const Evaluation& e) { return text ? bits_per_byte(e.loss) : e.accuracy; };
  std::ostringstream line;
  line << std::fixed << std::setprecision(4) << "epoch " << epoch << ": test "
       << (text ? "bits per byte " : "accuracy ") << headline(s.last_eval) << ", test loss " << s.last_eval.loss
       << ", train loss " << train_loss << " (worker 0)";
  if (s.info.decentralized) {
    line << "; average of the workers' models; worker 0's own: " << headline(s.worker0_eval) << ", parameter variance "
         << std::scientific << std::setprecision(3) << s.parameter_variance;
  }
  log::info(line.str());
}

}  // namespace

void evaluate_and_record(WorkerState& s) {
  // A virtual run's evaluation takes no virtual time (worker_state.hpp's wall_now): it is recorded at its start.
  const double started = s.wall_now();
  s.evaluation_time.start();
  struct StopOnExit {
    Stopwatch& watch;
    ~StopOnExit() { watch.stop(); }
  } stop_on_exit{s.evaluation_time};
  const auto wall_of_evaluation = [&] { return s.c.virtual_cluster ? started : s.wall_now(); };
  agree_on_workers(s.p);  // the test set is cut by the group that evaluates
  const bool average_of_workers = s.info.decentralized && s.p.comm;
  s.last_eval = average_of_workers ? evaluate_average_and_worker0(s) : evaluate_shared_model(s);
  s.last_eval_step = s.position.global_step;
  if (target_reached(s.c, s.last_eval) && s.time_to_target < 0) {
    s.time_to_target = wall_of_evaluation();
  }
  // Every worker takes part: the sum is a collective.
  const double bytes_sent = static_cast<double>(s.algorithm->stats().bytes_sent);
  const double bytes_per_worker = sum_over_workers(s.p, {bytes_sent})[0] / static_cast<double>(worker_count(s.p));
  if (!s.leader()) return;
  const auto& position = s.position;
  const double epoch = static_cast<double>(position.global_step) / static_cast<double>(s.steps_per_epoch);
  const double train_loss = s.epoch_loss_count > 0 ? s.epoch_loss_sum / static_cast<double>(s.epoch_loss_count) : NAN;
  nlohmann::json metrics = {{"epoch", epoch},
                            {"step", position.global_step},
                            {"wall_seconds", wall_of_evaluation()},
                            {"train_seconds", position.train_seconds},
                            {"samples", position.samples},
                            {"train_loss", train_loss}};
  add_test_figures(metrics, s.last_eval, s.p.dataset.text);
  metrics["lr"] = s.schedule.at(std::max<int64_t>(0, position.global_step - 1), s.steps_per_epoch);
  metrics["bytes_sent_per_worker"] = bytes_per_worker;
  if (s.p.comm) metrics["parameter_variance"] = s.parameter_variance;
  if (s.info.decentralized) {
    add_test_figures(metrics, s.worker0_eval, s.p.dataset.text, "_worker0");
  }
  s.files->append_metrics(metrics);
  log_evaluation(s, epoch, train_loss);
}

}  // namespace distsgd::train
