#include "distsgd/cli/emulated_launch.hpp"

#include <nlohmann/json.hpp>

#include "distsgd/cluster/emulated_cluster.hpp"
#include "distsgd/comm/self_launch.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/log.hpp"
#include "distsgd/core/timer.hpp"

namespace distsgd::cli {

cluster::NetworkRequest network_request(const std::string& net, int64_t hosts, const std::string& placement,
                                        const std::vector<std::string>& links) {
  cluster::NetworkRequest request;
  request.net = net;
  request.hosts = hosts;
  request.placement = placement;
  request.links = links;
  return request;
}

int launch_on_emulated_cluster(const cluster::NetworkRequest& request, int64_t workers, int64_t servers, uint64_t seed,
                               const std::string& what, int argc, char** argv, std::vector<std::string> labels,
                               std::vector<std::pair<std::string, std::string>> extra_env,
                               const std::function<void(const nlohmann::json&)>& on_report,
                               std::vector<bool> survivable) {
  auto plan = cluster::plan_cluster(request, workers, servers);
  // Before any thread starts: becoming root of a user namespace is only allowed to a single-threaded process.
  const std::string missing = cluster::acquire_network_privileges();
  require(missing.empty(), missing);
  cluster::EmulatedCluster emulated(std::move(plan), seed);
  std::string layout;
  for (const auto& host : emulated.plan().hosts) {
    std::string ranks;
    for (const int64_t rank : host.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(rank);
    layout += (layout.empty() ? "" : "; ") + host.address + " ranks " + ranks + " " +
              cluster::describe_rate(host.link.rate_bits_per_second) +
              (host.link.impairment.any() ? " (" + host.link.text + ")" : "");
  }
  log::info("launching " + what + " on an emulated cluster of " + std::to_string(emulated.plan().hosts.size()) +
            " hosts: " + layout);

  comm::EmulatedHosts hosts;
  hosts.network_namespace_fd_of_rank = emulated.network_namespace_fd_of_rank();
  hosts.master_addr = emulated.plan().hosts.front().address;
  hosts.interface = cluster::EmulatedCluster::interface();
  // A rank that timed out behind a link that was down: the failure line names that link and its ranks.
  hosts.failure_context = [&emulated] { return emulated.outages_so_far(); };
  const auto start = Clock::now();
  const int status =
      comm::launch_self(argc, argv, std::move(labels), std::move(extra_env), &hosts, std::move(survivable));
  on_report(emulated.report(seconds_since(start)));
  return status;
}

}  // namespace distsgd::cli
