// `distsgd <command> --workers N` (or `--processes N`) without an external launcher: re-run this very executable,
// with the same arguments, as one child per rank on this host, and host their rendezvous store. The children find
// their rank through process_env_from_environment() and take the distributed path.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace distsgd::comm {

// Where the ranks run when they are spread over emulated hosts (network namespaces): as on a real cluster, rank 0
// hosts the store at its host's address, and Gloo binds to each host's interface.
struct EmulatedHosts {
  std::vector<int> network_namespace_fd_of_rank;
  std::string master_addr;                       // rank 0's host address
  std::string interface;                         // GLOO_SOCKET_IFNAME of every host
  std::function<std::string()> failure_context;  // see LaunchSpec::failure_context
};

// Starts one copy of this program (argv[1..] unchanged) per label, in rank order, with MASTER_ADDR/MASTER_PORT of a
// store hosted here (or, with `hosts`, by rank 0) plus `extra_env`, and supervises them (launch_local). Returns the
// status to exit with. `survivable` (optional, one per label): see LaunchSpec::survivable.
int launch_self(int argc, char** argv, std::vector<std::string> labels,
                std::vector<std::pair<std::string, std::string>> extra_env = {}, const EmulatedHosts* hosts = nullptr,
                std::vector<bool> survivable = {});

}  // namespace distsgd::comm
