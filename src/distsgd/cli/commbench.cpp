#include "distsgd/cli/commbench.hpp"

#include "distsgd/cli/commbench_cluster.hpp"
#include "distsgd/cli/emulated_launch.hpp"
#include "distsgd/comm/gloo_communicator.hpp"
#include "distsgd/comm/process_env.hpp"
#include "distsgd/comm/self_launch.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/host_cores.hpp"
#include "distsgd/core/json_file.hpp"
#include "distsgd/core/linear_fit.hpp"
#include "distsgd/core/log.hpp"
#include "distsgd/core/timer.hpp"
#include "distsgd/optim/threads.hpp"

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <thread>

namespace distsgd::cli {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * 1024;
constexpr double kGB = 1e9;  // bandwidths in decimal GB/s, as links are quoted
constexpr int64_t kPingTag = 101, kPongTag = 102, kIncastTag = 103;

struct SizeResult {
  int64_t bytes = 0;
  int64_t repeats = 0;
  double median_seconds = 0;
  double min_seconds = 0;
};

struct PrimitiveResult {
  std::string name;
  std::vector<SizeResult> sizes;
  LinearFit fit;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Warm-up rounds set up Gloo's connections and buffers for the size; large messages need fewer.
int64_t warmups_for(int64_t bytes) { return bytes <= kMiB ? 3 : 1; }

// An iteration of a collective lasts until its slowest rank is done: gather every rank's per-iteration times and
// keep the maximum of each iteration.
std::vector<double> slowest_rank_times(comm::Communicator& comm, const std::vector<double>& mine) {
  auto local = torch::tensor(mine, torch::kFloat64);
  std::vector<at::Tensor> everyone;
  for (int64_t r = 0; r < comm.workers(); ++r) everyone.push_back(torch::empty_like(local));
  comm.allgather(everyone, local).wait();
  auto slowest = torch::stack(everyone).amax(0);
  return std::vector<double>(slowest.data_ptr<double>(), slowest.data_ptr<double>() + slowest.numel());
}

SizeResult summarize(int64_t bytes, const std::vector<double>& times) {
  return {bytes, static_cast<int64_t>(times.size()), median(times), *std::min_element(times.begin(), times.end())};
}

// Each timed iteration starts from a barrier, so no rank's time includes waiting for a late peer to arrive.
SizeResult measure_allreduce(comm::Communicator& comm, int64_t bytes, int64_t repeats) {
  auto data = torch::zeros({bytes / 4});  // zeros: sums stay finite however many rounds run
  for (int64_t i = 0; i < warmups_for(bytes); ++i) comm.allreduce_sum(data).wait();
  std::vector<double> times;
  for (int64_t i = 0; i < repeats; ++i) {
    comm.barrier_workers();
    const auto start = Clock::now();
    comm.allreduce_sum(data).wait();
    times.push_back(seconds_since(start));
  }
  return summarize(bytes, slowest_rank_times(comm, times));
}

// One ping-pong of `data` between ranks 0 and 1 (called by those two only).
void round_trip(comm::Communicator& comm, at::Tensor& data) {
  if (comm.rank() == 0) {
    comm.send(data, 1, kPingTag).wait();
    comm.receive(data, 1, kPongTag).wait();
  } else {
    comm.receive(data, 0, kPingTag).wait();
    comm.send(data, 0, kPongTag).wait();
  }
}

// Ping-pong between ranks 0 and 1: the one-way time is half of rank 0's round trip. Other ranks sit it out.
SizeResult measure_send_recv(comm::Communicator& comm, int64_t bytes, int64_t repeats) {
  auto data = torch::zeros({bytes / 4});
  std::vector<double> times;
  if (comm.rank() <= 1) {
    for (int64_t i = 0; i < warmups_for(bytes); ++i) round_trip(comm, data);
    for (int64_t i = 0; i < repeats; ++i) {
      const auto start = Clock::now();
      round_trip(comm, data);
      times.push_back(seconds_since(start) / 2);
    }
  }
  comm.barrier_world();
  return comm.rank() == 0 ? summarize(bytes, times) : SizeResult{};
}

// Incast: every rank but 0 sends `bytes` to rank 0 at once, as workers push to one parameter server; the time is
// rank 0's, from the barrier until the last message is in.
SizeResult measure_incast(comm::Communicator& comm, int64_t bytes, int64_t repeats) {
  const int64_t senders = comm.world_size() - 1;
  auto data = torch::zeros({bytes / 4});
  std::vector<at::Tensor> inbox;
  if (comm.rank() == 0) {
    for (int64_t s = 0; s < senders; ++s) inbox.push_back(torch::empty_like(data));
  }
  auto round = [&] {
    if (comm.rank() == 0) {
      std::vector<comm::Work> receives;
      for (int64_t s = 0; s < senders; ++s) receives.push_back(comm.receive(inbox[s], s + 1, kIncastTag));
      for (auto& work : receives) work.wait();
    } else {
      comm.send(data, 0, kIncastTag).wait();
    }
  };
  for (int64_t i = 0; i < warmups_for(bytes); ++i) round();
  std::vector<double> times;
  for (int64_t i = 0; i < repeats; ++i) {
    comm.barrier_world();
    const auto start = Clock::now();
    round();
    times.push_back(seconds_since(start));
  }
  comm.barrier_world();
  return comm.rank() == 0 ? summarize(bytes, times) : SizeResult{};
}

// How late a message reaches a rank whose host's cores are all busy (the shared-core hosts of distsgd validate and
// the emulated cluster): every rank runs a spinning thread, as a training rank computes, while ranks 0 and 1
// ping-pong 4 KiB; each one-way time less the idle ping-pong's fastest is one delay. Quantiles of those, on rank 0.
constexpr double kDelayQuantiles[] = {0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99};

std::vector<sim::ClusterDescription::DelayQuantile> measure_busy_delivery(comm::Communicator& comm, int64_t repeats) {
  constexpr int64_t kBytes = 4 * kKiB;
  const SizeResult idle = measure_send_recv(comm, kBytes, repeats);
  std::atomic<bool> stop{false};
  std::thread spinner([&stop] {
    volatile double x = 1;
    while (!stop.load(std::memory_order_relaxed)) {
      for (int i = 0; i < 10000; ++i) x = x * 1.0000001 + 1e-9;
    }
  });
  comm.barrier_world();
  auto data = torch::zeros({kBytes / 4});
  std::vector<double> delays;
  if (comm.rank() <= 1) {
    for (int64_t i = 0; i < repeats; ++i) {
      const auto start = Clock::now();
      round_trip(comm, data);
      delays.push_back(std::max(0.0, seconds_since(start) / 2 - idle.min_seconds));
    }
  }
  comm.barrier_world();
  stop = true;
  spinner.join();
  if (comm.rank() != 0) return {};
  std::sort(delays.begin(), delays.end());
  std::vector<sim::ClusterDescription::DelayQuantile> quantiles;
  for (const double q : kDelayQuantiles) {
    const auto at = static_cast<size_t>(std::lround(q * static_cast<double>(delays.size() - 1)));
    quantiles.push_back({q, std::max(delays[at], quantiles.empty() ? 0.0 : quantiles.back().seconds)});
  }
  return quantiles;
}

std::string size_label(int64_t bytes) {
  return bytes >= kMiB && bytes % kMiB == 0 ? std::to_string(bytes / kMiB) + " MiB"
                                            : std::to_string(bytes / kKiB) + " KiB";
}

std::string formatted(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

void print_header(const PrimitiveResult& p, int64_t processes) {
  if (p.name == "allreduce") {
    std::cout << "allreduce_sum of float32, " << processes
              << " processes (slowest rank's time per repeat; bandwidths from the median; busbw = algbw * 2(P-1)/P)\n"
              << "      size  repeats      min_us   median_us  algbw_GB/s  busbw_GB/s" << std::endl;
  } else if (p.name == "incast") {
    std::cout << "incast: ranks 1.." << processes - 1
              << " each send the size to rank 0 at once (rank 0's time; bandwidth = all bytes / median)\n"
              << "      size  repeats      min_us   median_us   bw_GB/s" << std::endl;
  } else {
    std::cout << "send/recv ping-pong, rank 0 <-> rank 1 (one way = half the round trip; bandwidth from the median)\n"
              << "      size  repeats      min_us   median_us   bw_GB/s" << std::endl;
  }
}

void print_row(const PrimitiveResult& p, const SizeResult& s, int64_t processes) {
  const double senders = p.name == "incast" ? static_cast<double>(processes - 1) : 1.0;
  const double bandwidth = senders * static_cast<double>(s.bytes) / s.median_seconds / kGB;
  const std::string label = size_label(s.bytes);
  std::cout << std::string(10 - std::min<size_t>(10, label.size()), ' ') << label
            << formatted("%9.0f", static_cast<double>(s.repeats)) << formatted("%12.1f", s.min_seconds * 1e6)
            << formatted("%12.1f", s.median_seconds * 1e6) << formatted("%12.3f", bandwidth);
  if (p.name == "allreduce") {
    const double bus_factor = 2.0 * static_cast<double>(processes - 1) / static_cast<double>(processes);
    std::cout << formatted("%12.3f", bandwidth * bus_factor);
  }
  std::cout << std::endl;
}

void print_fit(const PrimitiveResult& p) {
  std::cout << "fit t(m) = alpha + beta*m to the minima (" << p.name
            << "): alpha = " << formatted("%.1f", p.fit.alpha * 1e6)
            << " us, 1/beta = " << formatted("%.3f", 1.0 / p.fit.beta / kGB) << " GB/s\n"
            << std::endl;
}

nlohmann::json to_json(const PrimitiveResult& p) {
  nlohmann::json sizes = nlohmann::json::array(), repeats = nlohmann::json::array(), medians = nlohmann::json::array(),
                 minimums = nlohmann::json::array();
  for (const auto& s : p.sizes) {
    sizes.push_back(s.bytes);
    repeats.push_back(s.repeats);
    medians.push_back(s.median_seconds);
    minimums.push_back(s.min_seconds);
  }
  return {{"sizes_bytes", sizes},
          {"repeats", repeats},
          {"median_seconds", medians},
          {"min_seconds", minimums},
          {"alpha_seconds", p.fit.alpha},
          {"beta_seconds_per_byte", p.fit.beta},
          {"bandwidth_gb_per_second", 1.0 / p.fit.beta / kGB}};
}

// The line is fitted to each size's fastest repeat: scheduling noise only ever adds time, and on a loaded host it
// can lift the medians of every size alike (a scheduler slice of ms), flattening or even tilting the line.
void fit(PrimitiveResult& p) {
  std::vector<double> x, y;
  for (const auto& s : p.sizes) {
    x.push_back(static_cast<double>(s.bytes));
    y.push_back(s.min_seconds);
  }
  p.fit = fit_relative_least_squares(x, y);
}

// The fits as a cluster description (distsgd simulate --cluster), with the hosts the processes ran on.
void write_cluster(const CommbenchConfig& c, const comm::ProcessEnv& env, const std::vector<PrimitiveResult>& results,
                   const std::vector<sim::ClusterDescription::DelayQuantile>& busy_delivery) {
  CommbenchFits fits;
  fits.busy_delivery = busy_delivery;
  fits.processes = c.processes;
  for (const auto& primitive : results) {
    if (primitive.name == "allreduce") fits.allreduce = primitive.fit;
    if (primitive.name == "send_recv") fits.send_recv = primitive.fit;
    if (primitive.name == "incast") fits.incast = primitive.fit;
  }
  auto cluster = cluster_from_commbench(fits, layout_of(env, c.network, c.processes));
  if (!c.handover_from.empty()) {
    std::vector<sim::AllreduceFit> allreduce_fits{cluster.allreduce_fit};
    for (const auto& path : c.handover_from) allreduce_fits.push_back(sim::load_cluster(path).allreduce_fit);
    cluster.collective_handover = sim::collective_handover_from_fits(allreduce_fits);
  }
  write_json_atomically(c.cluster_out, sim::to_json(cluster));
  std::cout << "cluster for distsgd simulate --cluster " << c.cluster_out << ": " << sim::describe_links(cluster)
            << std::endl;
}

int run_rank(const CommbenchConfig& c, const comm::ProcessEnv& env) {
  require(env.world_size == c.processes, "the launcher started " + std::to_string(env.world_size) +
                                             " processes but --processes is " + std::to_string(c.processes));
  configure_threads(1);  // nothing to compute: keep OpenMP's threads from competing with Gloo's
  comm::GlooCommunicator comm(env, env.world_size, std::chrono::milliseconds(static_cast<int64_t>(c.timeout * 1000)));
  const bool leader = comm.rank() == 0;

  std::vector<PrimitiveResult> results{{"allreduce", {}, {}}};
  if (c.send_recv) results.push_back({"send_recv", {}, {}});
  if (c.incast) results.push_back({"incast", {}, {}});
  for (auto& primitive : results) {
    if (leader) print_header(primitive, c.processes);
    for (const int64_t bytes : message_sizes(c)) {
      const int64_t repeats = repeats_for(c, bytes);
      auto s = primitive.name == "allreduce"   ? measure_allreduce(comm, bytes, repeats)
               : primitive.name == "send_recv" ? measure_send_recv(comm, bytes, repeats)
                                               : measure_incast(comm, bytes, repeats);
      if (!leader) continue;
      primitive.sizes.push_back(s);
      print_row(primitive, s, c.processes);
    }
    if (leader) {
      fit(primitive);
      print_fit(primitive);
    }
  }
  std::vector<sim::ClusterDescription::DelayQuantile> busy_delivery;
  if (c.busy_delivery) {
    // Enough round trips for the tail quantiles (each a few ms at most: well under a second in all).
    busy_delivery = measure_busy_delivery(comm, std::max<int64_t>(c.repeats, 200));
    if (leader) {
      std::cout << "busy delivery: 4 KiB ping-pong while all " << c.processes << " ranks compute on " << host_cores()
                << " cores; extra one-way time:";
      for (const auto& point : busy_delivery) {
        std::cout << " p" << formatted("%g", 100 * point.q) << " " << formatted("%.0f", point.seconds * 1e6) << " us";
      }
      std::cout << "\n" << std::endl;
    }
  }
  if (leader && !c.out.empty()) {
    nlohmann::json report = {{"processes", c.processes},
                             {"fit", "t(m) = alpha + beta*m, least squares on relative error, fitted to min_seconds"}};
    for (const auto& primitive : results) report[primitive.name] = to_json(primitive);
    if (c.busy_delivery) {
      report["busy_delivery"] = sim::busy_delivery_json(busy_delivery, host_cores());
      report["busy_delivery"]["message_bytes"] = 4 * kKiB;
    }
    write_json_atomically(c.out, report);
  }
  if (leader && !c.cluster_out.empty()) write_cluster(c, env, results, busy_delivery);
  comm.barrier_world();  // nobody tears down its connections while a peer still uses them
  return 0;
}

}  // namespace

void validate(const CommbenchConfig& c) {
  require(c.processes >= 2, "--processes must be at least 2 (got " + std::to_string(c.processes) + ")");
  require(c.min_kb >= 1, "--min-kb must be at least 1 (got " + std::to_string(c.min_kb) + ")");
  require(c.max_mb >= 1, "--max-mb must be at least 1 (got " + std::to_string(c.max_mb) + ")");
  require(c.max_mb <= 4096, "--max-mb must be at most 4096 (got " + std::to_string(c.max_mb) + ")");
  require(c.min_kb * kKiB * 4 <= c.max_mb * kMiB, "--min-kb " + std::to_string(c.min_kb) + " and --max-mb " +
                                                      std::to_string(c.max_mb) +
                                                      " leave fewer than two message sizes to fit a line to");
  require(c.repeats >= 1, "--repeats must be at least 1 (got " + std::to_string(c.repeats) + ")");
  require(c.timeout > 0, "--timeout must be positive");
  require(c.handover_from.empty() || !c.cluster_out.empty(), "--handover-from needs --cluster-out");
  for (const auto& path : c.handover_from) {
    // Read now, so that a wrong file is one error before any process starts.
    require(
        std::filesystem::is_regular_file(path),
        "--handover-from " + path + ": no such file (expected a cluster written by distsgd commbench --cluster-out)");
    const auto other = sim::load_cluster(path);
    require(other.allreduce_fit.processes >= 2,
            "--handover-from " + path + ": no allreduce_fit (expected a cluster written by distsgd commbench)");
    require(other.allreduce_fit.processes != c.processes,
            "--handover-from " + path + ": measured at " + std::to_string(c.processes) +
                " processes, as this run is (give files of other process counts)");
  }
  for (const auto& [flag, path] : {std::pair{"--out", c.out}, std::pair{"--cluster-out", c.cluster_out}}) {
    if (path.empty()) continue;
    const auto dir = std::filesystem::path(path).parent_path();
    require(dir.empty() || std::filesystem::is_directory(dir),
            std::string(flag) + " " + path + ": no directory " + dir.string());
  }
}

std::vector<int64_t> message_sizes(const CommbenchConfig& c) {
  std::vector<int64_t> sizes;
  for (int64_t bytes = c.min_kb * kKiB; bytes <= c.max_mb * kMiB; bytes *= 4) sizes.push_back(bytes);
  return sizes;
}

int64_t repeats_for(const CommbenchConfig& c, int64_t bytes) {
  if (bytes <= kMiB) return c.repeats;
  return std::min(c.repeats, std::max<int64_t>(5, c.repeats * kMiB / bytes));
}

int run_commbench(const CommbenchConfig& c, int argc, char** argv) {
  validate(c);
  const auto env = comm::process_env_from_environment();
  if (env) return run_rank(c, *env);
  std::vector<std::string> labels;
  for (int64_t r = 0; r < c.processes; ++r) labels.push_back("rank " + std::to_string(r));
  if (cluster::network_requested(c.network)) {
    return launch_on_emulated_cluster(c.network, c.processes, 0, 1, std::to_string(c.processes) + " processes", argc,
                                      argv, labels, {}, [&](const nlohmann::json& report) {
                                        // The network measured over goes into the results, for fits per network.
                                        if (!c.out.empty())
                                          update_json_file(
                                              c.out, [&](nlohmann::json& results) { results["network"] = report; });
                                      });
  }
  log::info("launching " + std::to_string(c.processes) + " processes on this host");
  return comm::launch_self(argc, argv, labels);
}

}  // namespace distsgd::cli
