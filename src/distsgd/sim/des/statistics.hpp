// What a discrete-event simulation reports (spec/simulator.md, "Inputs and outputs"): per worker the mean, median and
// 95th percentile iteration time, its compute and exposed communication per iteration and bytes sent; overall
// throughput, scaling efficiency, server and link utilisation, and the staleness histograms. Measured after each
// worker's warm-up iterations; throughput and utilisation over the window in which every worker is past its warm-up and
// none has finished (when there is no such window, a straggler far behind, each worker's own span).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "distsgd/sim/analytical/prediction.hpp"
#include "distsgd/sim/des/context.hpp"

namespace distsgd::sim {

struct DesWorkerFigures {
  int64_t iterations = 0;  // measured
  double mean_seconds = 0, p50_seconds = 0, p95_seconds = 0;
  double compute_seconds = 0;                // per iteration: the worker's compute (forward, backward, update, ...)
  double exposed_communication_seconds = 0;  // per iteration: the rest
  double bytes_sent = 0;                     // per iteration
};

struct DesUtilisation {
  std::string name;          // a group of ports ("node_out", "server_in", ...) or "server_compute"
  double mean = 0, max = 0;  // busy fraction over the window, over the group's members
};

struct DesResult {
  std::string algorithm;
  int64_t workers = 0, servers = 0, batch_size = 0;
  double iteration_seconds = 0;  // mean over workers of each one's mean
  double p50_seconds = 0,
         p95_seconds = 0;  // over every measured iteration of every worker
  double samples_per_second = 0;
  double scaling_efficiency = 0;  // throughput over P times one worker's without communication (as prediction.hpp)
  double exposed_communication_seconds = 0;  // mean over workers
  double bytes_per_worker = 0;               // sent per iteration, mean over workers
  std::vector<DesWorkerFigures> per_worker;
  std::vector<DesUtilisation> utilisation;
  std::map<int64_t, int64_t> staleness;  // server updates between a gradient's parameters and its application
  std::map<int64_t, int64_t> clock_gap;  // SSP: a pull's clock minus the slowest worker's when it was answered
  double window_start = 0, window_end = 0, simulated_seconds = 0;
  int64_t events = 0;
  double wall_seconds = 0;  // what the simulation took to run

  // The figures the analytical models give, for the same table.
  Prediction prediction() const;
};

nlohmann::json to_json(const DesResult& result);

// Records every worker's iterations as they complete, snapshots the links and servers at the window's ends, and makes
// the result.
class DesRecorder {
 public:
  explicit DesRecorder(DesContext& context);
  void iteration_done(int64_t worker, int64_t step);
  DesResult result(const std::string& algorithm);

 private:
  struct Snapshot {
    double time = 0;
    std::vector<double> carried;  // per port
    std::vector<double> busy;     // per server
  };
  Snapshot snapshot() const;
  std::vector<DesUtilisation> utilisation(const Snapshot& from, const Snapshot& to) const;

  DesContext& c_;
  int64_t warmup_, total_;
  std::vector<std::vector<double>> done_at_;  // per worker, per iteration
  std::vector<double> busy_at_warmup_, bytes_at_warmup_, busy_at_end_, bytes_at_end_;
  int64_t past_warmup_ = 0;
  bool closed_ = false;
  Snapshot open_, close_;
};

}  // namespace distsgd::sim
