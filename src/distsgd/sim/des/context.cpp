#include "distsgd/sim/des/context.hpp"

#include "distsgd/catalog/algorithm_catalog.hpp"
#include "distsgd/core/error.hpp"

#include <algorithm>

namespace distsgd::sim {
namespace {

std::vector<WorkerVariability> draws(const DesSettings& s) {
  std::vector<WorkerVariability> v;
  for (int64_t w = 0; w < s.workers; ++w) v.emplace_back(s.heterogeneity, w, s.workers, s.seed);
  return v;
}

// Link time factors as rate multipliers.
std::vector<double> link_rates(const std::vector<WorkerVariability>& v) {
  std::vector<double> rates;
  for (const auto& w : v) rates.push_back(1.0 / w.link_factor());
  return rates;
}

int64_t servers_of(const DesSettings& s) { return catalog::needs_servers(s.algorithm) ? s.servers : 0; }

CollectiveModel collective_model(const DesSettings& s) {
  constexpr int64_t kMostWorkersForSteps = 64;  // P flows per step, 2(P-1) steps: beyond, the flow model
  if (s.collectives == "steps") return CollectiveModel::kSteps;
  if (s.collectives == "flows") return CollectiveModel::kFlows;
  return s.workers <= kMostWorkersForSteps ? CollectiveModel::kSteps : CollectiveModel::kFlows;
}

}  // namespace

DesContext::DesContext(const ModelProfile& p, const ClusterDescription& c, const DesSettings& s)
    : profile(p),
      cluster(c),
      settings(s),
      workers(s.workers),
      servers(servers_of(s)),
      variability(draws(s)),
      ports(network, c, s.workers, servers_of(s), link_rates(variability)),
      collectives(queue, network, ports, s.workers, c.gamma_seconds_per_byte, collective_model(s)),
      trace(!s.trace_path.empty(), s.workers, servers_of(s)),
      bytes_sent(static_cast<size_t>(s.workers), 0.0),
      iteration(static_cast<size_t>(s.workers), 0),
      handlers_(static_cast<size_t>(s.workers * servers_of(s))),
      model_bytes_(p.gradient_bytes()),
      delivery_draws_(c, s.workers + servers_of(s), s.seed) {
  compute.reserve(static_cast<size_t>(workers));  // tasks hold pointers to their resource: never reallocate
  for (int64_t w = 0; w < workers; ++w) compute.emplace_back(queue);
  server_cpu.reserve(static_cast<size_t>(servers));
  for (int64_t k = 0; k < servers; ++k) server_cpu.emplace_back(queue);
  if (c.shared_cores > 0) share_cores(c.shared_cores);
  if (delivery_draws_.applies())
    collectives.set_delivery_delay([this] { return busy_delivery_delay(); },
                                   [this] { return delivery_draws_.mean(ranks_computing()); });
  if (c.interference_alpha_seconds > 0) {
    collectives.set_interference([this](int64_t w) { return compute[static_cast<size_t>(w)].busy(); },
                                 c.interference_alpha_seconds);
  }
}

double DesContext::busy_delivery_delay() { return delivery_draws_.next(ranks_computing()); }

int64_t DesContext::ranks_computing() const {
  int64_t computing = 0;
  for (const auto& thread : compute) computing += thread.computing_since_before_now() ? 1 : 0;
  for (const auto& thread : server_cpu) computing += thread.computing_since_before_now() ? 1 : 0;
  return computing;
}

Next DesContext::delivered(double bytes, Next arrived, bool read_header_first) {
  if (!delivery_draws_.applies()) return arrived;
  return [this, with_payload = bytes > 0, read_header_first, arrived = std::move(arrived)] {
    const double header = busy_delivery_delay();
    if (!with_payload) return queue.after(header, arrived);
    const double payload = busy_delivery_delay();
    queue.after(read_header_first ? header + payload : std::max(header, payload), arrived);
  };
}

void DesContext::share_cores(double cores) {
  const PortId all_cores = network.add_port(cores);
  auto on_shared_cores = [this, all_cores](FifoResource& thread) {
    Path path;
    path.add(network.add_port(1.0));  // a thread runs on one core at a time
    path.add(all_cores);
    thread.run_tasks_with([this, path](double seconds, std::function<void()> finished) {
      network.transfer(path, seconds, 0.0, std::move(finished));
    });
  };
  for (auto& thread : compute) on_shared_cores(thread);
  for (auto& thread : server_cpu) on_shared_cores(thread);
}

double DesContext::update_seconds(int64_t worker, double bytes) const {
  return profile.update_seconds_per_byte * bytes * variability[static_cast<size_t>(worker)].compute_factor();
}

void DesContext::run(int64_t worker, const char* span_name, double seconds, Next next) {
  compute[static_cast<size_t>(worker)].submit(seconds, [this, worker, span_name, next = std::move(next)](double start) {
    if (span_name) trace.span(worker, span_name, start, queue.now());
    next();
  });
}

void DesContext::run_on_server(int64_t server, const char* span_name, double seconds, Next next) {
  server_cpu[static_cast<size_t>(server)].submit(seconds,
                                                 [this, server, span_name, next = std::move(next)](double start) {
                                                   if (span_name)
                                                     trace.span(server_rank(server), span_name, start, queue.now());
                                                   next();
                                                 });
}

void DesContext::sleep(int64_t worker, const char* span_name, double seconds, Next next) {
  compute[static_cast<size_t>(worker)].submit_sleep(seconds,
                                                    [this, worker, span_name, next = std::move(next)](double start) {
                                                      if (span_name) trace.span(worker, span_name, start, queue.now());
                                                      next();
                                                    });
}

void DesContext::span(int64_t rank, const std::string& name, double start, Timeline::Lane lane) {
  trace.span(rank, name, start, queue.now(), lane);
}

void DesContext::send_to_server(int64_t worker, int64_t server, double bytes, Next arrived) {
  bytes_sent[static_cast<size_t>(worker)] += bytes;
  Handler& h = handler(worker, server);
  if (h.busy) {
    h.waiting.emplace_back(bytes, std::move(arrived));
    return;
  }
  h.busy = true;
  start_send_to_server(worker, server, bytes, std::move(arrived));
}

void DesContext::handled(int64_t worker, int64_t server) {
  Handler& h = handler(worker, server);
  require(h.busy, "simulator: a server's handler of a worker was freed twice");
  if (h.waiting.empty()) {
    h.busy = false;
    return;
  }
  auto [bytes, arrived] = std::move(h.waiting.front());
  h.waiting.pop_front();
  start_send_to_server(worker, server, bytes, std::move(arrived));
}

void DesContext::start_send_to_server(int64_t worker, int64_t server, double bytes, Next arrived) {
  const double processing = server_processing_seconds(cluster, 1, bytes);
  if (processing > 0) {
    arrived = [this, server, processing, arrived = std::move(arrived)] {
      run_on_server(server, "process request", processing, arrived);
    };
  }
  ports.transfer(ports.worker_to_server(worker, server), bytes, ports.worker_server_alpha(worker, server),
                 delivered(bytes, std::move(arrived)));
}

void DesContext::send_to_worker(int64_t server, int64_t worker, double bytes, Next arrived) {
  ports.transfer(ports.server_to_worker(server, worker), bytes, ports.worker_server_alpha(worker, server),
                 delivered(bytes, std::move(arrived)));
}

void DesContext::send_between_workers(int64_t from, int64_t to, double bytes, Next arrived, bool read_header_first) {
  bytes_sent[static_cast<size_t>(from)] += bytes;
  ports.transfer(ports.worker_to_worker(from, to), bytes, ports.worker_to_worker_alpha(from, to),
                 delivered(bytes, std::move(arrived), read_header_first));
}

}  // namespace distsgd::sim
