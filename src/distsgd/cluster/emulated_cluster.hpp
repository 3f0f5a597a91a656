// The emulated cluster of a run: one network namespace per host, joined through a bridge in a namespace of its own
// (the switch), each host's link shaped both ways. Built by the launcher before it starts the ranks, torn down when
// this object goes (or with the launcher, however it dies: nothing here is named or mounted anywhere).
//
//   host h namespace                      switch namespace
//   ranks on h --lo-- eth0 (10.88.x.y) <==veth==> hN -- br0 -- h0, h1, ...
//   uplink:   tbf on eth0 (host -> switch); the host's delay/jitter/loss applied by the delay line to its packets
//             on arrival at the receiving host's eth0 (see delay_line.hpp for why there)
//   downlink: tbf on hN (switch -> host)
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "distsgd/cluster/cluster_plan.hpp"
#include "distsgd/cluster/network_namespace.hpp"
#include "distsgd/cluster/route_socket.hpp"

namespace distsgd::cluster {

class DelayLine;

class EmulatedCluster {
 public:
  // Throws Error naming what failed (privileges, kernel support, a tool that is missing).
  EmulatedCluster(ClusterPlan plan, uint64_t seed);
  ~EmulatedCluster();

  const ClusterPlan& plan() const { return plan_; }
  std::vector<int> network_namespace_fd_of_rank() const;
  static std::string interface() { return "eth0"; }

  // Bytes through each host's interface since it was made.
  std::vector<InterfaceCounters> counters() const;
  // Per host: ranks, link, bytes each way, utilisation of each direction over `seconds`; per rank: its host's.
  nlohmann::json report(double seconds) const;

  // The links that have been down (down=START+LENGTH) before now, each with its host's ranks, e.g. "the emulated
  // link of host 10.88.0.2 (rank 1) went down 5 s after the start, for 60 s"; empty when none was.
  std::string outages_so_far() const;

  // tbf parameters for a rate (bytes/s): bucket and queue limit in bytes.
  static int64_t bucket_bytes(double bytes_per_second);
  static int64_t queue_limit_bytes(double bytes_per_second);

 private:
  ClusterPlan plan_;
  NetworkNamespace switch_;
  std::vector<NetworkNamespace> hosts_;
  std::unique_ptr<DelayLine> delay_line_;
  std::chrono::steady_clock::time_point links_up_at_;  // the delay line's start, from which outages are timed
};

}  // namespace distsgd::cluster
