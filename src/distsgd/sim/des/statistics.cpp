#include "distsgd/sim/des/statistics.hpp"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {
namespace {

// The q-quantile of sorted values, interpolated between neighbours.
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double at = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<size_t>(at);
  const size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (at - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

// Iterations a worker has completed by time t, counting the one under way in proportion.
double progress(const std::vector<double>& done_at, double t) {
  const auto k = static_cast<size_t>(std::upper_bound(done_at.begin(), done_at.end(), t) - done_at.begin());
  if (k == done_at.size()) return static_cast<double>(k);
  const double previous = k == 0 ? 0.0 : done_at[k - 1];
  return static_cast<double>(k) + (t - previous) / std::max(1e-300, done_at[k] - previous);
}

nlohmann::json histogram_json(const std::map<int64_t, int64_t>& h) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [value, count] : h) j[std::to_string(value)] = count;
  return j;
}

}  // namespace

Prediction DesResult::prediction() const {
  Prediction p;
  p.iteration_seconds = iteration_seconds;
  p.exposed_communication_seconds = exposed_communication_seconds;
  p.samples_per_second = samples_per_second;
  p.scaling_efficiency = scaling_efficiency;
  return p;
}

DesRecorder::DesRecorder(DesContext& context)
    : c_(context),
      warmup_(context.settings.warmup),
      total_(context.settings.warmup + context.settings.iterations),
      done_at_(static_cast<size_t>(context.workers)),
      busy_at_warmup_(static_cast<size_t>(context.workers), 0.0),
      bytes_at_warmup_(static_cast<size_t>(context.workers), 0.0),
      busy_at_end_(static_cast<size_t>(context.workers), 0.0),
      bytes_at_end_(static_cast<size_t>(context.workers), 0.0) {
  require(context.settings.iterations >= 1, "--iterations must be at least 1");
  for (auto& d : done_at_) d.reserve(static_cast<size_t>(total_));
  if (warmup_ == 0) {
    past_warmup_ = c_.workers;
    open_ = snapshot();
  }
}

DesRecorder::Snapshot DesRecorder::snapshot() const {
  Snapshot s;
  s.time = c_.queue.now();
  for (size_t p = 0; p < c_.network.port_count(); ++p)
    s.carried.push_back(c_.network.carried_bytes(static_cast<PortId>(p)));
  for (const auto& server : c_.server_cpu) s.busy.push_back(server.busy_seconds());
  return s;
}

void DesRecorder::iteration_done(int64_t worker, int64_t step) {
  const auto w = static_cast<size_t>(worker);
  done_at_[w].push_back(c_.queue.now());
  if (step + 1 == warmup_) {
    busy_at_warmup_[w] = c_.compute[w].busy_seconds();
    bytes_at_warmup_[w] = c_.bytes_sent[w];
    if (++past_warmup_ == c_.workers) open_ = snapshot();
  }
  if (step + 1 == total_) {
    busy_at_end_[w] = c_.compute[w].busy_seconds();
    bytes_at_end_[w] = c_.bytes_sent[w];
    if (!closed_) {
      closed_ = true;
      close_ = snapshot();
    }
  }
}

std::vector<DesUtilisation> DesRecorder::utilisation(const Snapshot& from, const Snapshot& to) const {
  std::vector<DesUtilisation> all;
  const double span = std::max(1e-300, to.time - from.time);
  for (const auto& group : c_.ports.port_groups()) {
    DesUtilisation u{group.name};
    for (const PortId p : group.ports) {
      const auto i = static_cast<size_t>(p);
      const double busy = (to.carried[i] - from.carried[i]) / (c_.network.capacity(p) * span);
      u.mean += busy / static_cast<double>(group.ports.size());
      u.max = std::max(u.max, busy);
    }
    all.push_back(u);
  }
  if (!c_.server_cpu.empty()) {
    DesUtilisation u{"server_compute"};
    for (size_t s = 0; s < c_.server_cpu.size(); ++s) {
      const double busy = (to.busy[s] - from.busy[s]) / span;
      u.mean += busy / static_cast<double>(c_.server_cpu.size());
      u.max = std::max(u.max, busy);
    }
    all.push_back(u);
  }
  return all;
}

DesResult DesRecorder::result(const std::string& algorithm) {
  DesResult r;
  r.algorithm = algorithm;
  r.workers = c_.workers;
  r.servers = c_.servers;
  r.batch_size = c_.profile.batch_size;
  r.simulated_seconds = c_.queue.now();
  r.events = c_.queue.events_run();
  const int64_t measured = total_ - warmup_;
  std::vector<double> pooled;
  double window_start = 0, window_end = std::numeric_limits<double>::max(), per_worker_rates = 0;
  for (int64_t worker = 0; worker < c_.workers; ++worker) {
    const auto w = static_cast<size_t>(worker);
    const auto& t = done_at_[w];
    require(static_cast<int64_t>(t.size()) == total_, "simulator: worker " + std::to_string(worker) + " completed " +
                                                          std::to_string(t.size()) + " of " + std::to_string(total_) +
                                                          " iterations (a deadlock in the simulated algorithm)");
    const double start = warmup_ == 0 ? 0.0 : t[static_cast<size_t>(warmup_ - 1)];
    std::vector<double> durations;
    for (int64_t k = warmup_; k < total_; ++k) {
      durations.push_back(t[static_cast<size_t>(k)] - (k == 0 ? 0.0 : t[static_cast<size_t>(k - 1)]));
    }
    pooled.insert(pooled.end(), durations.begin(), durations.end());
    std::sort(durations.begin(), durations.end());
    DesWorkerFigures f;
    f.iterations = measured;
    f.mean_seconds = (t.back() - start) / static_cast<double>(measured);
    f.p50_seconds = quantile(durations, 0.5);
    f.p95_seconds = quantile(durations, 0.95);
    f.compute_seconds = (busy_at_end_[w] - busy_at_warmup_[w]) / static_cast<double>(measured);
    f.exposed_communication_seconds = std::max(0.0, f.mean_seconds - f.compute_seconds);
    f.bytes_sent = (bytes_at_end_[w] - bytes_at_warmup_[w]) / static_cast<double>(measured);
    r.per_worker.push_back(f);
    r.iteration_seconds += f.mean_seconds / static_cast<double>(c_.workers);
    r.exposed_communication_seconds += f.exposed_communication_seconds / static_cast<double>(c_.workers);
    r.bytes_per_worker += f.bytes_sent / static_cast<double>(c_.workers);
    window_start = std::max(window_start, start);
    window_end = std::min(window_end, t.back());
    per_worker_rates += static_cast<double>(measured) / std::max(1e-300, t.back() - start);
  }
  std::sort(pooled.begin(), pooled.end());
  r.p50_seconds = quantile(pooled, 0.5);
  r.p95_seconds = quantile(pooled, 0.95);
  const double batch = static_cast<double>(c_.profile.batch_size);
  if (window_end > window_start) {
    double iterations = 0;
    for (const auto& t : done_at_) iterations += progress(t, window_end) - progress(t, window_start);
    r.samples_per_second = batch * iterations / (window_end - window_start);
    r.window_start = window_start;
    r.window_end = window_end;
    r.utilisation = utilisation(open_, close_);
  } else {
    // A straggler so far behind that the others finished before it left its warm-up: each worker's own rate.
    r.samples_per_second = batch * per_worker_rates;
    r.window_end = r.simulated_seconds;
    Snapshot start;
    start.carried.assign(c_.network.port_count(), 0.0);
    start.busy.assign(c_.server_cpu.size(), 0.0);
    r.utilisation = utilisation(start, snapshot());
  }
  const double alone = compute_seconds(c_.profile);  // one worker's iteration without communication
  r.scaling_efficiency = alone > 0 ? r.samples_per_second / (static_cast<double>(c_.workers) * batch / alone) : 0.0;
  r.staleness = c_.staleness;
  r.clock_gap = c_.clock_gap;
  return r;
}

nlohmann::json to_json(const DesResult& r) {
  nlohmann::json workers = nlohmann::json::array();
  for (const auto& f : r.per_worker) {
    workers.push_back({{"mean_seconds", f.mean_seconds},
                       {"p50_seconds", f.p50_seconds},
                       {"p95_seconds", f.p95_seconds},
                       {"compute_seconds", f.compute_seconds},
                       {"exposed_communication_seconds", f.exposed_communication_seconds},
                       {"bytes_sent_per_iteration", f.bytes_sent}});
  }
  nlohmann::json utilisation = nlohmann::json::object();
  for (const auto& u : r.utilisation) utilisation[u.name] = {{"mean", u.mean}, {"max", u.max}};
  return {{"algorithm", r.algorithm},
          {"workers", r.workers},
          {"servers", r.servers},
          {"iteration_seconds", r.iteration_seconds},
          {"p50_seconds", r.p50_seconds},
          {"p95_seconds", r.p95_seconds},
          {"samples_per_second", r.samples_per_second},
          {"scaling_efficiency", r.scaling_efficiency},
          {"exposed_communication_seconds", r.exposed_communication_seconds},
          {"bytes_sent_per_worker_per_iteration", r.bytes_per_worker},
          {"utilisation", utilisation},
          {"staleness_histogram", histogram_json(r.staleness)},
          {"clock_gap_histogram", histogram_json(r.clock_gap)},
          {"window_seconds", {r.window_start, r.window_end}},
          {"simulated_seconds", r.simulated_seconds},
          {"events", r.events},
          {"wall_seconds", r.wall_seconds},
          {"per_worker", workers}};
}

}  // namespace distsgd::sim
