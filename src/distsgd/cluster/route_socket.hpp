// The few rtnetlink requests the emulated cluster makes, through libnl-route-3: links (bridge, veth), addresses,
// the tbf queueing discipline, interface counters. A RouteSocket acts on the network namespace it was made in.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

struct nl_sock;  // libnl's, kept out of this header

namespace distsgd::cluster {

struct InterfaceCounters {
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t packets_dropped = 0;  // by the interface and its queueing discipline on the way out
};

class RouteSocket {
 public:
  RouteSocket();  // connects in the calling thread's network namespace
  ~RouteSocket();
  RouteSocket(const RouteSocket&) = delete;
  RouteSocket& operator=(const RouteSocket&) = delete;

  void add_bridge(const std::string& name);
  // A veth pair: `name` here, attached to bridge `master`; `peer_name` moved into the namespace `peer_namespace_fd`.
  void add_veth(const std::string& name, const std::string& master, const std::string& peer_name,
                int peer_namespace_fd);
  void set_up(const std::string& name);
  void add_address(const std::string& name, const std::string& address, int prefix_length);
  // Token bucket on the interface's way out: `rate` bytes/s, a bucket of `bucket` bytes, up to `limit` bytes queued.
  void set_rate(const std::string& name, double bytes_per_second, int64_t bucket_bytes, int64_t limit_bytes);
  InterfaceCounters counters(const std::string& name);

 private:
  int index_of(const std::string& name);
  ::nl_sock* socket_ = nullptr;
};

}  // namespace distsgd::cluster
