#include "distsgd/cluster/emulated_cluster.hpp"

#include <algorithm>
#include <cstdio>

#include "distsgd/cluster/delay_line.hpp"
#include "distsgd/core/error.hpp"

namespace distsgd::cluster {
namespace {

std::string format_seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", seconds);
  return text;
}

const char* kBridge = "br0";

std::string switch_port(std::size_t host) { return "h" + std::to_string(host); }

}  // namespace

// A bucket of 1 ms at the rate, at least three full frames. A message then leaves at the link's rate after at most
// 1 ms of burst: at 100 Mbit/s a 64 KiB message takes its 5.2 ms (with a 64 KiB bucket it took 0.6 ms, which bent
// the alpha-beta fits). tbf cuts GSO packets larger than the bucket into segments; a smaller bucket (100 us) made
// that per-segment work cap 1 Gbit/s links at ~0.3 Gbit/s on this 2-core machine.
int64_t EmulatedCluster::bucket_bytes(double bytes_per_second) {
  return std::max<int64_t>(3 * 1514, static_cast<int64_t>(bytes_per_second * 1e-3));
}

// 50 ms of queue at the rate (at least 1 MiB): room for an incast of several senders' windows, so TCP meets the
// rate rather than drops and retransmission timeouts.
int64_t EmulatedCluster::queue_limit_bytes(double bytes_per_second) {
  return bucket_bytes(bytes_per_second) +
         std::max<int64_t>(1024 * 1024, static_cast<int64_t>(bytes_per_second * 50e-3));
}

EmulatedCluster::EmulatedCluster(ClusterPlan plan, uint64_t seed)
    : plan_(std::move(plan)), switch_(NetworkNamespace::create()) {
  for (std::size_t h = 0; h < plan_.hosts.size(); ++h) hosts_.push_back(NetworkNamespace::create());

  switch_.run_inside([&] {
    RouteSocket route;
    route.add_bridge(kBridge);
    route.set_up(kBridge);
    for (std::size_t h = 0; h < hosts_.size(); ++h) {
      route.add_veth(switch_port(h), kBridge, interface(), hosts_[h].fd());
      route.set_up(switch_port(h));
      const double rate = plan_.hosts[h].link.rate_bytes_per_second();
      if (rate > 0) route.set_rate(switch_port(h), rate, bucket_bytes(rate), queue_limit_bytes(rate));
    }
  });
  bool impaired = false;
  for (std::size_t h = 0; h < hosts_.size(); ++h) {
    const HostPlan& host = plan_.hosts[h];
    hosts_[h].run_inside([&] {
      RouteSocket route;
      route.set_up("lo");
      route.add_address(interface(), host.address, plan_.prefix_length);
      route.set_up(interface());
      const double rate = host.link.rate_bytes_per_second();
      if (rate > 0) route.set_rate(interface(), rate, bucket_bytes(rate), queue_limit_bytes(rate));
    });
    impaired = impaired || host.link.impairment.any();
  }
  // This kernel family has no sch_netem: delay, jitter and loss are applied in user space (delay_line.hpp), and only
  // where asked for, so an unimpaired run has no packet leave the kernel.
  if (impaired) {
    delay_line_ = std::make_unique<DelayLine>(seed);
    for (std::size_t h = 0; h < hosts_.size(); ++h) {
      delay_line_->add_host(hosts_[h], interface(), plan_.hosts[h].link.impairment);
    }
    delay_line_->start();
    links_up_at_ = std::chrono::steady_clock::now();
  }
}

EmulatedCluster::~EmulatedCluster() {
  if (delay_line_) delay_line_->stop();
}

std::vector<int> EmulatedCluster::network_namespace_fd_of_rank() const {
  std::vector<int> fds;
  for (const int64_t host : plan_.host_of_rank) fds.push_back(hosts_[static_cast<std::size_t>(host)].fd());
  return fds;
}

std::vector<InterfaceCounters> EmulatedCluster::counters() const {
  std::vector<InterfaceCounters> all;
  for (const auto& host : hosts_) {
    host.run_inside([&] { all.push_back(RouteSocket().counters(interface())); });
  }
  return all;
}

nlohmann::json EmulatedCluster::report(double seconds) const {
  const auto all = counters();
  nlohmann::json hosts = nlohmann::json::array();
  nlohmann::json ranks = nlohmann::json::array();
  for (std::size_t h = 0; h < hosts_.size(); ++h) {
    const HostPlan& host = plan_.hosts[h];
    const double rate = host.link.rate_bytes_per_second();
    auto utilisation = [&](uint64_t bytes) -> nlohmann::json {
      if (rate <= 0 || seconds <= 0) return nullptr;
      return static_cast<double>(bytes) / (rate * seconds);
    };
    nlohmann::json entry = {{"host", h},
                            {"address", host.address},
                            {"ranks", host.ranks},
                            {"link", host.link.text},
                            {"rate_bits_per_second", host.link.rate_bits_per_second},
                            {"delay_seconds", host.link.impairment.delay_seconds},
                            {"jitter_seconds", host.link.impairment.jitter_seconds},
                            {"loss", host.link.impairment.loss},
                            {"down_after_seconds", host.link.impairment.down_after_seconds},
                            {"down_for_seconds", host.link.impairment.down_for_seconds},
                            {"bytes_sent", all[h].bytes_sent},
                            {"bytes_received", all[h].bytes_received},
                            {"utilisation_sent", utilisation(all[h].bytes_sent)},
                            {"utilisation_received", utilisation(all[h].bytes_received)}};
    if (delay_line_) {
      const auto counts = delay_line_->counts(h);
      entry["delay_line_packets"] = counts.packets;
      entry["delay_line_dropped"] = counts.dropped;
    }
    hosts.push_back(entry);
  }
  for (std::size_t rank = 0; rank < plan_.host_of_rank.size(); ++rank) {
    const auto h = static_cast<std::size_t>(plan_.host_of_rank[rank]);
    ranks.push_back({{"rank", rank},
                     {"host", h},
                     {"link_bytes_sent", all[h].bytes_sent},
                     {"link_bytes_received", all[h].bytes_received},
                     {"link_shared_with", plan_.hosts[h].ranks.size() - 1}});
  }
  nlohmann::json report = {{"placement", name_of(plan_.placement)}, {"seconds", seconds}};
  report["shaping"] = delay_line_ ? "tbf both ways; delay, jitter and loss in the NFQUEUE delay line" : "tbf both ways";
  report["links"] = hosts;
  report["ranks"] = ranks;
  return report;
}

std::string EmulatedCluster::outages_so_far() const {
  if (!delay_line_) return "";
  const double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - links_up_at_).count();
  std::string text;
  for (const auto& host : plan_.hosts) {
    const Impairment& link = host.link.impairment;
    if (link.down_for_seconds <= 0 || link.down_after_seconds > now) continue;
    std::string ranks;
    for (const int64_t rank : host.ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
    text += std::string(text.empty() ? "" : "; ") + "the emulated link of host " + host.address +
            (host.ranks.size() == 1 ? " (rank " : " (ranks ") + ranks + ") went down " +
            format_seconds(link.down_after_seconds) + " after the start, for " + format_seconds(link.down_for_seconds);
  }
  return text;
}

}  // namespace distsgd::cluster
