#include "distsgd/cluster/cluster_plan.hpp"

#include <map>

#include "distsgd/core/error.hpp"
#include "distsgd/core/text.hpp"

namespace distsgd::cluster {
namespace {

// 10.88.0.0/16: private, and unlikely to clash with anything (the hosts' namespaces see nothing else anyway).
std::string host_address(std::size_t host) {
  const std::size_t n = host + 1;  // .0.0 is the network
  return "10.88." + std::to_string(n / 256) + "." + std::to_string(n % 256);
}

// "worker3" -> rank 3; "server0" -> rank workers + 0; "rank5" -> 5; "host2" -> -(2 + 1) (a host, not a rank).
int64_t parse_target(const std::string& target, int64_t workers, int64_t servers, int64_t hosts) {
  auto number_after = [&](const std::string& prefix, int64_t count, const std::string& what) -> int64_t {
    const std::string digits = target.substr(prefix.size());
    require(!digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos && digits.size() < 10,
            "--link: '" + target + "' is not of the form " + prefix + "N");
    const int64_t index = std::stoll(digits);
    require(index < count, "--link " + target + ": the run has " + std::to_string(count) + " " + what +
                               (count == 0 ? "" : " (" + prefix + "0.." + prefix + std::to_string(count - 1) + ")"));
    return index;
  };
  if (target.rfind("rank", 0) == 0) return number_after("rank", workers + servers, "processes");
  if (target.rfind("worker", 0) == 0) return number_after("worker", workers, "workers");
  if (target.rfind("server", 0) == 0) return workers + number_after("server", servers, "servers");
  if (target.rfind("host", 0) == 0) return -(number_after("host", hosts, "hosts") + 1);
  throw Error("--link: '" + target + "' names no rank or host (workerN, serverN, rankN or hostN)");
}

}  // namespace

bool network_requested(const NetworkRequest& request) {
  return !request.net.empty() || request.hosts != 0 || !request.links.empty() || request.placement != "round-robin";
}

ClusterPlan plan_cluster(const NetworkRequest& request, int64_t workers, int64_t servers) {
  require(!request.net.empty(), "--hosts, --placement and --link describe the emulated cluster: give --net too");
  const int64_t ranks = workers + servers;
  require(ranks >= 2, "--net emulates a network between processes: the run has only one (give --workers 2 or more)");
  require(request.hosts >= 0, "--hosts must be at least 1 (got " + std::to_string(request.hosts) + ")");
  const int64_t hosts = request.hosts == 0 ? ranks : request.hosts;
  require(hosts <= ranks,
          "--hosts " + std::to_string(hosts) + " is more hosts than the run's " + std::to_string(ranks) + " processes");
  require(hosts <= 65000, "--hosts: at most 65000 emulated hosts");

  ClusterPlan plan;
  const auto placement = enum_from_name<Placement>(request.placement);
  require(placement.has_value(),
          "--placement: unknown '" + request.placement + "' (" + join_or(enum_name_list<Placement>()) + ")");
  plan.placement = *placement;
  const LinkSpec default_link = parse_link("--net", request.net);
  plan.hosts.resize(static_cast<std::size_t>(hosts));
  for (std::size_t h = 0; h < plan.hosts.size(); ++h) {
    plan.hosts[h].link = default_link;
    plan.hosts[h].address = host_address(h);
  }
  const int64_t per_host = (ranks + hosts - 1) / hosts;
  for (int64_t rank = 0; rank < ranks; ++rank) {
    const int64_t host = plan.placement == Placement::kRoundRobin ? rank % hosts : rank / per_host;
    plan.host_of_rank.push_back(host);
    plan.hosts[static_cast<std::size_t>(host)].ranks.push_back(rank);
  }

  std::map<int64_t, std::string> override_of_host;  // the --link that set each host's link
  for (const auto& text : request.links) {
    const auto equals = text.find('=');
    require(equals != std::string::npos && equals > 0,
            "--link: '" + text + "' is not of the form TARGET=LINK (e.g. server0=1gbit or worker3=100mbit,loss=0.5%)");
    const std::string target = text.substr(0, equals);
    const int64_t named = parse_target(target, workers, servers, hosts);
    const int64_t host = named < 0 ? -named - 1 : plan.host_of_rank[static_cast<std::size_t>(named)];
    const LinkSpec link = parse_link("--link " + target, text.substr(equals + 1), default_link);
    auto& host_plan = plan.hosts[static_cast<std::size_t>(host)];
    if (auto previous = override_of_host.find(host); previous != override_of_host.end()) {
      const bool same = previous->second.substr(previous->second.find('=')) == text.substr(equals);
      require(same, "--link " + text + " and --link " + previous->second + " set the link of host" +
                        std::to_string(host) + " (shared by its ranks) differently");
    }
    override_of_host[host] = text;
    host_plan.link = link;
  }
  return plan;
}

}  // namespace distsgd::cluster
