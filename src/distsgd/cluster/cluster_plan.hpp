// Which emulated host each rank runs on, and each host's link: from --net, --hosts, --placement and --link.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "distsgd/cluster/link_spec.hpp"
#include "distsgd/core/enum_names.hpp"

namespace distsgd::cluster {

// round-robin: rank r on host r mod H (workers and servers spread over the hosts, as co-located parameter servers
// are in the IPDPS setup); block: consecutive ranks fill one host after another (as MPI's --map-by slot).
enum class Placement { kRoundRobin, kBlock };
inline const EnumNames<Placement>& enum_names(Placement) {
  static const EnumNames<Placement> names{{Placement::kRoundRobin, "round-robin"}, {Placement::kBlock, "block"}};
  return names;
}

// The flags as given (empty net: no emulated cluster).
struct NetworkRequest {
  std::string net;
  int64_t hosts = 0;  // 0: one host per rank
  std::string placement = "round-robin";
  std::vector<std::string> links;  // "worker3=100mbit,loss=0.5%", "server0=1gbit", "host2=..."
};

struct HostPlan {
  std::vector<int64_t> ranks;
  LinkSpec link;
  std::string address;  // on the emulated subnet
};

struct ClusterPlan {
  std::vector<HostPlan> hosts;
  std::vector<int64_t> host_of_rank;
  Placement placement = Placement::kRoundRobin;
  int prefix_length = 16;  // of the hosts' subnet
};

// Throws Error (one line naming the flag) for bad input: unparsable links, --hosts above the number of ranks or
// below 1, a --link naming a rank or host that does not exist, two --link for one host that disagree, link
// flags without --net.
ClusterPlan plan_cluster(const NetworkRequest& request, int64_t workers, int64_t servers);

// Whether any network flag differs from its default (so --hosts alone is refused rather than ignored).
bool network_requested(const NetworkRequest& request);

}  // namespace distsgd::cluster
