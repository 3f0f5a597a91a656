#include "distsgd/algo/ps/host_groups.hpp"

#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"

#include <unistd.h>

#include <climits>
#include <set>

namespace distsgd::algo::ps {

std::string this_host_key() {
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  char ns[128] = {};
  const ssize_t n = readlink("/proc/self/ns/net", ns, sizeof ns - 1);
  return std::string(host) + " " + (n > 0 ? std::string(ns, static_cast<size_t>(n)) : std::string("?"));
}

HostGroup host_group(const std::vector<std::string>& keys, int64_t worker) {
  require(worker >= 0 && worker < static_cast<int64_t>(keys.size()), "host_group: no worker " + std::to_string(worker));
  HostGroup group;
  for (size_t w = 0; w < keys.size(); ++w) {
    if (keys[w] == keys[static_cast<size_t>(worker)]) group.members.push_back(static_cast<int64_t>(w));
  }
  group.hosts = static_cast<int64_t>(std::set<std::string>(keys.begin(), keys.end()).size());
  return group;
}

HostGroup exchange_host_group(comm::Communicator& comm) {
  const std::string prefix = "distsgd/ps_host_key/";
  const std::string key = comm.host_key();
  comm.store_set(prefix + std::to_string(comm.rank()), key.empty() ? this_host_key() : key);
  std::vector<std::string> keys;
  for (int64_t w = 0; w < comm.workers(); ++w) keys.push_back(comm.store_get(prefix + std::to_string(w)));
  return host_group(keys, comm.rank());
}

}  // namespace distsgd::algo::ps
