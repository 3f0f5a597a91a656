// Running the ranks of `distsgd train` or `distsgd commbench` on an emulated cluster (--net): build the hosts and
// links, start the ranks inside them, and report the links' traffic when they are done.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "distsgd/cluster/cluster_plan.hpp"

namespace distsgd::cli {

// Checks the request (`what` names the processes in the progress line) (throws Error with one line for bad input,
// before anything is built), builds the cluster, runs one copy of this program per label in it, and hands the network
// report (plan, per-link bytes and utilisation over the run's wall time) to `on_report` after the ranks exited,
// whatever their status.
int launch_on_emulated_cluster(const cluster::NetworkRequest& request, int64_t workers, int64_t servers, uint64_t seed,
                               const std::string& what, int argc, char** argv, std::vector<std::string> labels,
                               std::vector<std::pair<std::string, std::string>> extra_env,
                               const std::function<void(const nlohmann::json&)>& on_report,
                               std::vector<bool> survivable = {});

// The request from the flags.
cluster::NetworkRequest network_request(const std::string& net, int64_t hosts, const std::string& placement,
                                        const std::vector<std::string>& links);

}  // namespace distsgd::cli
