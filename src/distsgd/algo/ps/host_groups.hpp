// Which workers share a host, for BSP's local aggregation (--local-aggregation host). Every worker publishes a key
// naming its host through the rendezvous store: the host name and the network namespace. Workers started by one
// launcher on one machine share a key (the launcher's local world); the emulated cluster's hosts (--net, --hosts)
// are network namespaces of one machine, so ranks placed on one emulated host share a key and the others do not,
// whatever the placement. On the virtual cluster the hosts are its simulated nodes (Communicator::host_key).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace distsgd::comm {
class Communicator;
}

namespace distsgd::algo::ps {

struct HostGroup {
  std::vector<int64_t> members;  // worker ranks, ascending; members[0] leads (pushes the sum)
  int64_t hosts = 1;             // hosts the workers are on, in all
  int64_t leader() const { return members.front(); }
  int64_t size() const { return static_cast<int64_t>(members.size()); }
};

// This process's host key: "<host name> <network namespace>".
std::string this_host_key();

// The group of worker `worker`, given every worker's key (keys[w] of worker w).
HostGroup host_group(const std::vector<std::string>& keys, int64_t worker);

// Every worker calls it once (it exchanges the keys through the store).
HostGroup exchange_host_group(comm::Communicator& comm);

}  // namespace distsgd::algo::ps
