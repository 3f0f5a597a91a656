#include "distsgd/sim/platform/cluster_description.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "distsgd/core/error.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/core/text.hpp"
#include "distsgd/sim/platform/json_fields.hpp"

namespace distsgd::sim {
namespace {

// Link figures of spec/simulator.md ("Communication costs": calibrate always).
constexpr double kPcie3x16 = 12e9;   // PCIe 3 x16 ~12 GB/s
constexpr double kNvlink2 = 25e9;    // NVLink2, 25 GB/s per link
constexpr double k10GbE = 1.17e9;    // 10GbE ~1.17 GB/s
constexpr double k25GbE = 2.9e9;     // 25GbE ~2.9 GB/s
constexpr double k56GbIb = 6.8e9;    // 56 Gb IB ~6.8 GB/s
constexpr double k100GbIb = 12e9;    // 100 Gb IB ~12 GB/s
constexpr double kTcpAlpha = 30e-6;  // 10GbE alpha 20-50 us over TCP
// Not in the spec: 100 GbE at the share of its 12.5 GB/s line rate that 10GbE's figure is of its 1.25 GB/s.
constexpr double k100GbE = 12.5e9 * (k10GbE / 1.25e9);
// Assumed, not measured (the spec gives no figure): InfiniBand's alpha (kept from the first presets), and one
// hop between GPUs of a node over PCIe or NVLink.
constexpr double kIbAlpha = 5e-6;
constexpr double kIntraNodeAlpha = 10e-6;

const char* kSpecLinks = "spec/simulator.md link presets (calibrate with distsgd commbench)";

// One worker per node: the network link is the worker's own.
ClusterDescription network(const std::string& name, const std::string& source, double rate, double alpha) {
  ClusterDescription c;
  c.name = name;
  c.source = source;
  c.worker_bytes_per_second = c.server_bytes_per_second = rate;
  c.alpha_seconds = alpha;
  return c;
}

// distsgd's emulated links (--net): tbf on every port, whose queue is one FIFO.
ClusterDescription emulated(const std::string& name, const std::string& source, double rate, double alpha) {
  ClusterDescription c = network(name, source, rate, alpha);
  c.egress_queue = ClusterDescription::EgressQueue::kFifo;
  return c;
}

// Nodes of several workers sharing the node's link; servers on a link like a node's unless given.
ClusterDescription nodes(const std::string& name, const std::string& source, int64_t workers_per_node,
                         double intra_node_rate, double node_rate, double alpha, double server_rate = 0) {
  ClusterDescription c = network(name, source, node_rate, alpha);
  c.workers_per_node = workers_per_node;
  c.intra_node_bytes_per_second = intra_node_rate;
  c.intra_node_alpha_seconds = kIntraNodeAlpha;
  if (server_rate > 0) c.server_bytes_per_second = server_rate;
  return c;
}

// The same cluster with its parameter servers on the workers' nodes.
ClusterDescription on_worker_nodes(ClusterDescription c) {
  c.server_placement = ClusterDescription::ServerPlacement::kWorkerNodes;
  return c;
}

// Generic links and distsgd's own emulated links, fitted by `distsgd commbench --net` (bench/README.md,
// 2026-11-22: send/recv 1/beta 0.117-0.120 GB/s at 1gbit, 0.0119 at 100mbit); then the seed papers' clusters
// (spec/simulator.md, "The seed papers' clusters").
std::vector<ClusterDescription> all_presets() {
  const std::string ipdps =
      "Ko et al., IPDPS 2021: 3 hosts x 8 TITAN V run as 6 containers ('nodes') x 4 workers, PCIe 3 within a "
      "container; the 2 containers of a host share its NIC, so each node's link is half of it (servers too, "
      "co-located in the containers); ";
  const std::string shi =
      "Shi et al., ICPADS 2018 (DAG model): 4 nodes x 4 Tesla P40, PCIe within a node, as recalled, unverified "
      "(check the paper); ";
  const std::string hkbu =
      "HKBU ddl-benchmarks (Shi et al.'s survey): V100-PCIe-32GB, 4 per node over PCIe 3, up to 32 GPUs; ";
  return {
      network("10gbe", kSpecLinks, k10GbE, kTcpAlpha),
      network("25gbe", kSpecLinks, k25GbE, kTcpAlpha),
      network("56gb-ib", kSpecLinks, k56GbIb, kIbAlpha),
      network("100gb-ib", kSpecLinks, k100GbIb, kIbAlpha),
      emulated("emulated-1gbit", "distsgd commbench --net 1gbit, bench/README.md (2026-11-22)", 0.118e9, 100e-6),
      emulated("emulated-100mbit", "distsgd commbench --net 100mbit, bench/README.md (2026-11-22)", 0.0119e9, 100e-6),
      nodes("ipdps2021-10gbe", ipdps + "10 GbE; link figures " + kSpecLinks, 4, kPcie3x16, k10GbE / 2, kTcpAlpha),
      nodes("ipdps2021-56gb-ib", ipdps + "56 Gb InfiniBand; link figures " + kSpecLinks, 4, kPcie3x16, k56GbIb / 2,
            kIbAlpha),
      nodes("cikm2021-aladdin",
            std::string("Ko et al., CIKM 2021 (ALADDIN): 4 machines x 2 RTX 2080 Ti over PCIe 3, 10 GbE "
                        "(ConnectX-4 Lx); link figures ") +
                kSpecLinks,
            2, kPcie3x16, k10GbE, kTcpAlpha),
      nodes("shi2018-p40-10gbe", shi + "10 GbE; link figures " + kSpecLinks, 4, kPcie3x16, k10GbE, kTcpAlpha),
      nodes("shi2018-p40-56gb-ib", shi + "56 Gb InfiniBand; link figures " + kSpecLinks, 4, kPcie3x16, k56GbIb,
            kIbAlpha),
      nodes("hkbu-v100-10gbe", hkbu + "10 GbE; link figures " + kSpecLinks, 4, kPcie3x16, k10GbE, kTcpAlpha),
      nodes("hkbu-v100-100gbe",
            hkbu + "100 GbE at 10 GbE's share of line rate (11.7 GB/s, TCP alpha); link figures " + kSpecLinks, 4,
            kPcie3x16, k100GbE, kTcpAlpha),
      nodes("hkbu-v100-100gb-ib", hkbu + "100 Gb InfiniBand; link figures " + kSpecLinks, 4, kPcie3x16, k100GbIb,
            kIbAlpha),
      nodes("dgx1-v100",
            std::string("PyTorch DDP paper / benchmark (Li et al., VLDB 2020): DGX V100 nodes of 8 GPUs over NVLink, "
                        "4 x 100 Gb InfiniBand per node (node link 4 x 12 GB/s); a ring hop in a node over one "
                        "NVLink2 link (25 GB/s; NCCL's several rings go faster); link figures ") +
                kSpecLinks,
            8, kNvlink2, 4 * k100GbIb, kIbAlpha),
      on_worker_nodes(nodes("aws-p2-8xlarge",
                            std::string("TensorFlow performance benchmarks (tensorflow.org/performance/benchmarks, "
                                        "2017), Amazon EC2 p2.8xlarge: 8 K80 GPUs over PCIe 3, 10 Gigabit networking; "
                                        "its distributed runs put a parameter server on every instance (servers on "
                                        "the workers' nodes); link figures ") +
                                kSpecLinks,
                            8, kPcie3x16, k10GbE, kTcpAlpha)),
      nodes("nvlink8-25gbe",
            std::string("generic: nodes of 8 GPUs over NVLink2 (25 GB/s per ring hop), one 25 GbE NIC each; ") +
                kSpecLinks,
            8, kNvlink2, k25GbE, kTcpAlpha),
      nodes("nvlink8-100gb-ib",
            std::string("generic: nodes of 8 GPUs over NVLink2 (25 GB/s per ring hop), one 100 Gb IB NIC each; ") +
                kSpecLinks,
            8, kNvlink2, k100GbIb, kIbAlpha),
  };
}

std::string gigabytes(double bytes_per_second) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g GB/s", bytes_per_second / 1e9);
  return text;
}

std::string microseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g us", seconds * 1e6);
  return text;
}

// The seconds of `points` at x: linear between the points, flat beyond them, 0 without any (`at`: a point's x).
template <typename Point, typename X>
double piecewise_linear_seconds(const std::vector<Point>& points, double x, X at) {
  if (points.empty()) return 0;
  if (x <= at(points.front())) return points.front().seconds;
  for (size_t i = 1; i < points.size(); ++i) {
    const auto& a = points[i - 1];
    const auto& b = points[i];
    if (x <= at(b)) {
      return at(b) > at(a) ? a.seconds + (b.seconds - a.seconds) * (x - at(a)) / (at(b) - at(a)) : b.seconds;
    }
  }
  return points.back().seconds;
}

}  // namespace

double ClusterDescription::busy_delivery_seconds(double u) const {
  return piecewise_linear_seconds(busy_delivery, u, [](const DelayQuantile& p) { return p.q; });
}

double ClusterDescription::busy_delivery_mean_seconds() const {
  if (busy_delivery.empty()) return 0;
  double mean = busy_delivery.front().q * busy_delivery.front().seconds;
  for (size_t i = 1; i < busy_delivery.size(); ++i) {
    const auto& a = busy_delivery[i - 1];
    const auto& b = busy_delivery[i];
    mean += (b.q - a.q) * (a.seconds + b.seconds) / 2;
  }
  return mean + (1 - busy_delivery.back().q) * busy_delivery.back().seconds;
}

double ClusterDescription::collective_handover_seconds(int64_t ranks) const {
  return piecewise_linear_seconds(collective_handover, static_cast<double>(ranks),
                                  [](const HandoverPoint& p) { return static_cast<double>(p.ranks); });
}

std::vector<ClusterDescription::HandoverPoint> collective_handover_from_fits(std::vector<AllreduceFit> fits) {
  fits.erase(std::remove_if(fits.begin(), fits.end(), [](const AllreduceFit& f) { return f.processes < 2; }),
             fits.end());
  std::sort(fits.begin(), fits.end(),
            [](const AllreduceFit& a, const AllreduceFit& b) { return a.processes < b.processes; });
  std::vector<ClusterDescription::HandoverPoint> points;
  if (fits.size() < 2) return points;
  auto per_step = [](const AllreduceFit& f) { return f.alpha_seconds / (2.0 * static_cast<double>(f.processes - 1)); };
  const double fewest = per_step(fits.front());
  for (const auto& f : fits) {
    if (!points.empty() && points.back().ranks == f.processes) continue;
    points.push_back({f.processes, std::max(0.0, per_step(f) - fewest)});
  }
  return points;
}

ClusterDescription with_busy_delivery_in_alpha(const ClusterDescription& cluster, int64_t ranks, double busy_share) {
  if (!cluster.delays_busy_deliveries(ranks)) return cluster;
  ClusterDescription c = cluster;
  const double mean = c.busy_delivery_mean_seconds() * std::clamp(busy_share, 0.0, 1.0);
  c.alpha_seconds += mean;
  if (c.intra_node_bytes_per_second > 0) c.intra_node_alpha_seconds += mean;
  if (c.allreduce_fit.processes >= 2) {
    c.allreduce_fit.alpha_seconds += c.allreduce_startups(c.allreduce_fit.processes) * mean;
  }
  c.busy_delivery.clear();
  return c;
}

double busy_delivery_share(int64_t workers, int64_t cores, double computing) {
  const double u = std::clamp(computing, 0.0, 1.0);
  double at_least = 0;
  double term = std::pow(1 - u, static_cast<double>(workers));  // P(k = 0), then P(k) from P(k - 1)
  for (int64_t k = 0; k <= workers; ++k) {
    if (k > 0) {
      term = u >= 1 ? (k == workers ? 1.0 : 0.0)
                    : term * static_cast<double>(workers - k + 1) / static_cast<double>(k) * u / (1 - u);
    }
    if (k >= cores) at_least += term;
  }
  return std::clamp(at_least, 0.0, 1.0);
}

int64_t ClusterDescription::workers_on_fullest_node(int64_t workers) const {
  return std::max<int64_t>(1, std::min(workers, workers_per_node));
}

double ClusterDescription::worker_share_bytes_per_second(int64_t workers) const {
  return worker_bytes_per_second / static_cast<double>(workers_on_fullest_node(workers));
}

double ClusterDescription::allreduce_startups(int64_t processes) const {
  if (processes < 2) return 0;
  const double p = static_cast<double>(processes);
  return allreduce_latency == AllreduceLatency::kTree ? 2.0 * std::log2(p) : 2.0 * (p - 1);
}

double ClusterDescription::allreduce_alpha_scale(int64_t processes) const {
  if (processes < 2) return 1;
  return allreduce_startups(processes) / (2.0 * static_cast<double>(processes - 1));
}

LinkCost ClusterDescription::whole_allreduce_cost(int64_t workers) const {
  LinkCost cost = allreduce_cost(workers);
  cost.alpha *= allreduce_alpha_scale(workers);
  return cost;
}

LinkCost ClusterDescription::allreduce_cost(int64_t workers) const {
  const bool across_nodes = workers > workers_per_node;
  const int64_t measured = allreduce_fit.processes;
  if (measured >= 2 && (measured > workers_per_node) == across_nodes) {
    // The ring formula inverted at the measured P: t = S*alpha + 2(P-1)/P*m*beta (S the start-ups: 2(P-1) for a
    // ring), the reduction folded into beta (the fit measured it), so predictions at other P scale as the ring does.
    // The measurement holds the host's hand-over at its own P: only the difference to `workers` is added.
    const double steps = 2.0 * static_cast<double>(measured - 1);
    const double handover = collective_handover_seconds(workers) - collective_handover_seconds(measured);
    return {std::max(0.0, allreduce_fit.alpha_seconds / allreduce_startups(measured) + handover),
            allreduce_fit.seconds_per_byte * static_cast<double>(measured) / steps, 0};
  }
  const double handover = collective_handover_seconds(workers);
  const LinkCost network{alpha_seconds + handover, 1.0 / worker_bytes_per_second, gamma_seconds_per_byte};
  if (workers_per_node == 1) return network;  // no hop inside a node
  const LinkCost intra{intra_node_alpha() + handover, 1.0 / intra_node_rate(), gamma_seconds_per_byte};
  if (!across_nodes) return intra;
  return {std::max(network.alpha, intra.alpha), std::max(network.beta, intra.beta), gamma_seconds_per_byte};
}

LinkCost ClusterDescription::alltoall_cost(int64_t workers) const {
  // Each step wakes every rank, as an allreduce's does: the host's hand-over too (the DES's RingCollectives).
  const double handover = collective_handover_seconds(workers);
  const LinkCost intra{intra_node_alpha() + handover, 1.0 / intra_node_rate(), gamma_seconds_per_byte};
  if (workers <= workers_per_node) return intra;
  const double k = static_cast<double>(workers_on_fullest_node(workers)), p = static_cast<double>(workers);
  const double crowding = k * (p - k) / (p - 1);
  const LinkCost network{alpha_seconds + handover, crowding / worker_bytes_per_second, gamma_seconds_per_byte};
  if (workers_per_node == 1) return network;
  // Each worker's own slices also cross its intra-node link (PCIe to the NIC or to its node's peers).
  return {std::max(network.alpha, intra.alpha), std::max(network.beta, intra.beta), gamma_seconds_per_byte};
}

std::vector<ClusterDescription> cluster_presets() { return all_presets(); }

std::vector<std::string> cluster_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : all_presets()) names.push_back(p.name);
  return names;
}

std::string describe_links(const ClusterDescription& c) {
  std::string text;
  if (c.workers_per_node > 1) {
    text += std::to_string(c.workers_per_node) + " workers per node over " + gigabytes(c.intra_node_rate()) +
            " (alpha " + microseconds(c.intra_node_alpha()) + "); node link ";
  } else {
    text += "1 worker per node; link ";
  }
  text += gigabytes(c.worker_bytes_per_second) + " (alpha " + microseconds(c.alpha_seconds) + "); servers " +
          (c.servers_on_worker_nodes() ? std::string("on the workers' nodes") : gigabytes(c.server_bytes_per_second));
  if (c.compute_scale != 1 || c.iteration_overhead_seconds > 0) {
    char adjusted[96];
    std::snprintf(adjusted, sizeof adjusted, "; compute x%.3g, +%.3g ms per iteration", c.compute_scale,
                  c.iteration_overhead_seconds * 1e3);
    text += adjusted;
  }
  if (c.interference_alpha_seconds > 0) {
    text += "; +" + microseconds(c.interference_alpha_seconds) + " per collective step across nodes under compute";
  }
  if (c.shared_cores > 0 && c.communication_cpu_seconds_per_byte > 0) {
    char cpu[96];
    std::snprintf(cpu, sizeof cpu, "; %.3g ns of a shared core per byte moved",
                  c.communication_cpu_seconds_per_byte * 1e9);
    text += cpu;
  }
  if (c.shared_cores > 0 && c.compute_cpu_scale > 0) {
    char cpu[96];
    std::snprintf(cpu, sizeof cpu, "; the cores carry compute x%.3g", c.compute_cpu_scale);
    text += cpu;
  }
  if (c.allreduce_latency == ClusterDescription::AllreduceLatency::kTree) {
    text += "; an allreduce's start-ups grow as a tree's 2 log2(P)";
  }
  if (c.allreduce_fit.processes > 0) {
    text += "; allreduce measured at " + std::to_string(c.allreduce_fit.processes) + " processes: alpha " +
            microseconds(c.allreduce_fit.alpha_seconds) + ", 1/beta " +
            gigabytes(1.0 / c.allreduce_fit.seconds_per_byte);
  }
  if (!c.collective_handover.empty()) {
    text += "; per collective step at " + std::to_string(c.collective_handover.back().ranks) + " ranks +" +
            microseconds(c.collective_handover.back().seconds) + " of hand-over on the shared cores";
  }
  if (!c.busy_delivery.empty()) {
    text += "; from " + std::to_string(c.busy_delivery_cores) + " busy ranks on a message waits " +
            microseconds(c.busy_delivery_mean_seconds()) + " on average for a busy receiver";
  }
  return text;
}

std::string describe_cluster_presets() {
  std::string text;
  for (const auto& p : all_presets()) text += p.name + ": " + describe_links(p) + "\n    source: " + p.source + "\n";
  return text;
}

const EnumNames<ClusterDescription::AllreduceLatency>& enum_names(ClusterDescription::AllreduceLatency) {
  static const EnumNames<ClusterDescription::AllreduceLatency> names{
      {ClusterDescription::AllreduceLatency::kRing, "ring"}, {ClusterDescription::AllreduceLatency::kTree, "tree"}};
  return names;
}

const EnumNames<ClusterDescription::ServerPlacement>& enum_names(ClusterDescription::ServerPlacement) {
  static const EnumNames<ClusterDescription::ServerPlacement> names{
      {ClusterDescription::ServerPlacement::kOwnLinks, "own_links"},
      {ClusterDescription::ServerPlacement::kWorkerNodes, "worker_nodes"}};
  return names;
}

const EnumNames<ClusterDescription::EgressQueue>& enum_names(ClusterDescription::EgressQueue) {
  static const EnumNames<ClusterDescription::EgressQueue> names{{ClusterDescription::EgressQueue::kFair, "fair"},
                                                                {ClusterDescription::EgressQueue::kFifo, "fifo"}};
  return names;
}

namespace {

template <class E>
E named(const std::string& name, const std::string& what) {
  if (const auto value = enum_from_name<E>(name)) return *value;
  throw Error(what + "expected " + join_or(enum_name_list<E>()) + ", got '" + name + "'");
}

}  // namespace

ClusterDescription::AllreduceLatency allreduce_latency_named(const std::string& name, const std::string& what) {
  return named<ClusterDescription::AllreduceLatency>(name, what);
}

ClusterDescription::ServerPlacement server_placement_named(const std::string& name, const std::string& what) {
  return named<ClusterDescription::ServerPlacement>(name, what);
}

ClusterDescription cluster_from_json(const nlohmann::json& json, const std::string& source) {
  const JsonFields top(json, source);
  top.reject_unknown({"name",
                      "source",
                      "worker_bytes_per_second",
                      "server_bytes_per_second",
                      "alpha_seconds",
                      "gamma_seconds_per_byte",
                      "workers_per_node",
                      "intra_node_bytes_per_second",
                      "intra_node_alpha_seconds",
                      "shared_cores",
                      "allreduce_fit",
                      "compute_scale",
                      "iteration_overhead_seconds",
                      "interference_alpha_seconds",
                      "server_seconds_per_request",
                      "server_seconds_per_byte",
                      "communication_cpu_seconds_per_byte",
                      "compute_cpu_scale",
                      "busy_delivery",
                      "collective_handover",
                      "allreduce_latency",
                      "server_placement",
                      "egress_queue",
                      "calibration"});
  ClusterDescription c;
  c.name = top.text("name", false, source);
  c.source = top.text("source", false, source);
  c.worker_bytes_per_second = top.positive_number("worker_bytes_per_second");
  c.server_bytes_per_second = top.positive_number("server_bytes_per_second", false, c.worker_bytes_per_second);
  c.alpha_seconds = top.non_negative_number("alpha_seconds", false);
  c.gamma_seconds_per_byte = top.non_negative_number("gamma_seconds_per_byte", false);
  c.workers_per_node = top.integer_at_least("workers_per_node", 1, false, 1);
  c.intra_node_bytes_per_second = top.non_negative_number("intra_node_bytes_per_second", false);
  c.intra_node_alpha_seconds = top.non_negative_number("intra_node_alpha_seconds", false);
  c.shared_cores = top.non_negative_number("shared_cores", false, 0);
  c.compute_scale = top.positive_number("compute_scale", false, 1.0);
  c.iteration_overhead_seconds = top.non_negative_number("iteration_overhead_seconds", false);
  c.interference_alpha_seconds = top.non_negative_number("interference_alpha_seconds", false);
  c.server_seconds_per_request = top.non_negative_number("server_seconds_per_request", false);
  c.server_seconds_per_byte = top.non_negative_number("server_seconds_per_byte", false);
  c.communication_cpu_seconds_per_byte = top.non_negative_number("communication_cpu_seconds_per_byte", false);
  c.compute_cpu_scale = top.non_negative_number("compute_cpu_scale", false);
  c.allreduce_latency =
      allreduce_latency_named(top.text("allreduce_latency", false, "ring"), top.where("allreduce_latency"));
  c.server_placement =
      server_placement_named(top.text("server_placement", false, "own_links"), top.where("server_placement"));
  c.egress_queue =
      named<ClusterDescription::EgressQueue>(top.text("egress_queue", false, "fair"), top.where("egress_queue"));
  if (top.has("busy_delivery")) {
    // {"cores": 2, "quantiles": [0.1, 0.5, ...], "seconds": [2e-5, 1e-4, ...]} (commbench --busy-delivery).
    const JsonFields delay = top.object("busy_delivery");
    delay.reject_unknown({"cores", "quantiles", "seconds"});
    c.busy_delivery_cores = delay.integer_at_least("cores", 1);
    const auto& q = delay.array("quantiles");
    const auto& seconds = delay.array("seconds");
    require(q.size() == seconds.size(), delay.where("seconds") + "expected as many values as quantiles (" +
                                            std::to_string(q.size()) + "), got " + std::to_string(seconds.size()));
    for (size_t i = 0; i < q.size(); ++i) {
      require(q[i].is_number() && q[i].get<double>() >= 0 && q[i].get<double>() <= 1,
              delay.where("quantiles") + "expected numbers in [0, 1], got " + q[i].dump());
      require(seconds[i].is_number() && seconds[i].get<double>() >= 0,
              delay.where("seconds") + "expected non-negative numbers, got " + seconds[i].dump());
      ClusterDescription::DelayQuantile point{q[i].get<double>(), seconds[i].get<double>()};
      require(c.busy_delivery.empty() ||
                  (point.q > c.busy_delivery.back().q && point.seconds >= c.busy_delivery.back().seconds),
              delay.where("quantiles") + "expected quantiles and seconds that increase");
      c.busy_delivery.push_back(point);
    }
  }
  if (top.has("collective_handover")) {
    // {"ranks": [2, 4, 8], "seconds": [0, 1.5e-4, 8e-4]} (validate, from commbench's allreduce at each count).
    const JsonFields handover = top.object("collective_handover");
    handover.reject_unknown({"ranks", "seconds"});
    const auto& ranks = handover.array("ranks");
    const auto& seconds = handover.array("seconds");
    require(ranks.size() == seconds.size(), handover.where("seconds") + "expected as many values as ranks (" +
                                                std::to_string(ranks.size()) + "), got " +
                                                std::to_string(seconds.size()));
    for (size_t i = 0; i < ranks.size(); ++i) {
      require(ranks[i].is_number_integer() && ranks[i].get<int64_t>() >= 2,
              handover.where("ranks") + "expected integers of at least 2, got " + ranks[i].dump());
      require(seconds[i].is_number() && std::isfinite(seconds[i].get<double>()) && seconds[i].get<double>() >= 0,
              handover.where("seconds") + "expected non-negative numbers, got " + seconds[i].dump());
      ClusterDescription::HandoverPoint point{ranks[i].get<int64_t>(), seconds[i].get<double>()};
      require(c.collective_handover.empty() || point.ranks > c.collective_handover.back().ranks,
              handover.where("ranks") + "expected rank counts that increase");
      c.collective_handover.push_back(point);
    }
  }
  if (top.has("allreduce_fit")) {
    const JsonFields fit = top.object("allreduce_fit");
    fit.reject_unknown({"processes", "alpha_seconds", "seconds_per_byte"});
    c.allreduce_fit.processes = fit.integer_at_least("processes", 2);
    c.allreduce_fit.alpha_seconds = fit.non_negative_number("alpha_seconds");
    c.allreduce_fit.seconds_per_byte = fit.positive_number("seconds_per_byte");
  }
  return c;
}

// The preset of that name, if there is one (a cluster argument is a preset's name or a file's path).
std::optional<ClusterDescription> preset_named(const std::string& name) {
  for (const auto& p : all_presets()) {
    if (p.name == name) return p;
  }
  return std::nullopt;
}

ClusterDescription load_cluster(const std::string& name_or_path) {
  if (auto preset = preset_named(name_or_path)) return *preset;
  require(std::filesystem::exists(name_or_path),
          "--cluster: '" + name_or_path + "' is neither a preset (" + join(cluster_preset_names()) + ") nor a file");
  return cluster_from_json(read_json_file(name_or_path, "cluster file"), name_or_path);
}

std::vector<ClusterDescription> load_consistent_clusters(const std::string& name_or_path) {
  if (preset_named(name_or_path)) return {};
  const auto json = read_json_file(name_or_path, "cluster file");
  std::vector<ClusterDescription> clusters;
  const auto calibration = json.find("calibration");
  if (calibration == json.end() || !calibration->is_object()) return clusters;
  const auto consistent = calibration->find("consistent_clusters");
  if (consistent == calibration->end()) return clusters;
  require(consistent->is_array(), name_or_path + ": calibration.consistent_clusters: expected an array");
  for (size_t i = 0; i < consistent->size(); ++i) {
    clusters.push_back(cluster_from_json(
        (*consistent)[i], name_or_path + ": calibration.consistent_clusters[" + std::to_string(i) + "]"));
  }
  return clusters;
}

nlohmann::json busy_delivery_json(const std::vector<ClusterDescription::DelayQuantile>& quantiles, int64_t cores) {
  nlohmann::json json = {
      {"cores", cores}, {"quantiles", nlohmann::json::array()}, {"seconds", nlohmann::json::array()}};
  for (const auto& point : quantiles) {
    json["quantiles"].push_back(point.q);
    json["seconds"].push_back(point.seconds);
  }
  return json;
}

nlohmann::json to_json(const ClusterDescription& c) {
  nlohmann::json json = {{"name", c.name},
                         {"source", c.source},
                         {"worker_bytes_per_second", c.worker_bytes_per_second},
                         {"server_bytes_per_second", c.server_bytes_per_second},
                         {"alpha_seconds", c.alpha_seconds},
                         {"gamma_seconds_per_byte", c.gamma_seconds_per_byte},
                         {"workers_per_node", c.workers_per_node},
                         {"intra_node_bytes_per_second", c.intra_node_bytes_per_second},
                         {"intra_node_alpha_seconds", c.intra_node_alpha_seconds},
                         {"shared_cores", c.shared_cores},
                         {"compute_scale", c.compute_scale},
                         {"iteration_overhead_seconds", c.iteration_overhead_seconds},
                         {"interference_alpha_seconds", c.interference_alpha_seconds},
                         {"server_seconds_per_request", c.server_seconds_per_request},
                         {"server_seconds_per_byte", c.server_seconds_per_byte},
                         {"communication_cpu_seconds_per_byte", c.communication_cpu_seconds_per_byte},
                         {"compute_cpu_scale", c.compute_cpu_scale},
                         {"allreduce_latency", distsgd::name_of(c.allreduce_latency)},
                         {"server_placement", distsgd::name_of(c.server_placement)},
                         {"egress_queue", distsgd::name_of(c.egress_queue)}};
  if (!c.busy_delivery.empty()) json["busy_delivery"] = busy_delivery_json(c.busy_delivery, c.busy_delivery_cores);
  if (!c.collective_handover.empty()) {
    json["collective_handover"] = {{"ranks", nlohmann::json::array()}, {"seconds", nlohmann::json::array()}};
    for (const auto& point : c.collective_handover) {
      json["collective_handover"]["ranks"].push_back(point.ranks);
      json["collective_handover"]["seconds"].push_back(point.seconds);
    }
  }
  if (c.allreduce_fit.processes > 0) {
    json["allreduce_fit"] = {{"processes", c.allreduce_fit.processes},
                             {"alpha_seconds", c.allreduce_fit.alpha_seconds},
                             {"seconds_per_byte", c.allreduce_fit.seconds_per_byte}};
  }
  return json;
}

}  // namespace distsgd::sim
