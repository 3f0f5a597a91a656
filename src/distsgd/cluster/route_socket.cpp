#include "distsgd/cluster/route_socket.hpp"

#include <linux/if.h>
#include <linux/pkt_sched.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/bridge.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/tbf.h>
#include <netlink/route/tc.h>
#include <sys/socket.h>

#include "distsgd/core/error.hpp"

namespace distsgd::cluster {
namespace {

void check(int result, const std::string& what) {
  require(result >= 0, "emulated cluster: cannot " + what + ": " + nl_geterror(result));
}

// libnl objects are reference counted; each helper below owns what it allocates through these.
struct LinkDeleter {
  void operator()(rtnl_link* link) const { rtnl_link_put(link); }
};
using Link = std::unique_ptr<rtnl_link, LinkDeleter>;

Link allocated(rtnl_link* link, const std::string& what) {
  require(link != nullptr, "emulated cluster: out of memory allocating " + what);
  return Link(link);
}

}  // namespace

RouteSocket::RouteSocket() : socket_(nl_socket_alloc()) {
  require(socket_ != nullptr, "emulated cluster: cannot allocate a netlink socket");
  const int result = nl_connect(socket_, NETLINK_ROUTE);
  if (result < 0) {
    nl_socket_free(socket_);
    check(result, "open a netlink socket");
  }
}

RouteSocket::~RouteSocket() { nl_socket_free(socket_); }

int RouteSocket::index_of(const std::string& name) {
  rtnl_link* raw = nullptr;
  check(rtnl_link_get_kernel(socket_, 0, name.c_str(), &raw), "find interface " + name);
  Link link(raw);
  return rtnl_link_get_ifindex(link.get());
}

void RouteSocket::add_bridge(const std::string& name) {
  Link bridge = allocated(rtnl_link_bridge_alloc(), "a bridge");
  rtnl_link_set_name(bridge.get(), name.c_str());
  check(rtnl_link_add(socket_, bridge.get(), NLM_F_CREATE | NLM_F_EXCL), "create bridge " + name);
}

void RouteSocket::add_veth(const std::string& name, const std::string& master, const std::string& peer_name,
                           int peer_namespace_fd) {
  Link veth = allocated(rtnl_link_veth_alloc(), "a veth pair");
  rtnl_link_set_name(veth.get(), name.c_str());
  rtnl_link_set_master(veth.get(), index_of(master));
  rtnl_link* peer = rtnl_link_veth_get_peer(veth.get());  // a reference of its own
  rtnl_link_set_name(peer, peer_name.c_str());
  rtnl_link_set_ns_fd(peer, peer_namespace_fd);
  rtnl_link_put(peer);
  check(rtnl_link_add(socket_, veth.get(), NLM_F_CREATE | NLM_F_EXCL), "create veth pair " + name);
}

void RouteSocket::set_up(const std::string& name) {
  rtnl_link* raw = nullptr;
  check(rtnl_link_get_kernel(socket_, 0, name.c_str(), &raw), "find interface " + name);
  Link current(raw);
  Link change = allocated(rtnl_link_alloc(), "a link change");
  rtnl_link_set_flags(change.get(), IFF_UP);
  check(rtnl_link_change(socket_, current.get(), change.get(), 0), "bring up " + name);
}

void RouteSocket::add_address(const std::string& name, const std::string& address, int prefix_length) {
  nl_addr* local = nullptr;
  check(nl_addr_parse((address + "/" + std::to_string(prefix_length)).c_str(), AF_INET, &local),
        "parse address " + address);
  rtnl_addr* entry = rtnl_addr_alloc();
  rtnl_addr_set_ifindex(entry, index_of(name));
  rtnl_addr_set_local(entry, local);
  const int result = rtnl_addr_add(socket_, entry, 0);
  rtnl_addr_put(entry);
  nl_addr_put(local);
  check(result, "give " + name + " the address " + address);
}

void RouteSocket::set_rate(const std::string& name, double bytes_per_second, int64_t bucket_bytes,
                           int64_t limit_bytes) {
  rtnl_qdisc* qdisc = rtnl_qdisc_alloc();
  require(qdisc != nullptr, "emulated cluster: out of memory allocating a qdisc");
  rtnl_tc_set_ifindex(TC_CAST(qdisc), index_of(name));
  rtnl_tc_set_parent(TC_CAST(qdisc), TC_H_ROOT);
  rtnl_tc_set_handle(TC_CAST(qdisc), TC_HANDLE(1, 0));
  int result = rtnl_tc_set_kind(TC_CAST(qdisc), "tbf");
  if (result >= 0) {
    rtnl_qdisc_tbf_set_limit(qdisc, static_cast<int>(limit_bytes));
    rtnl_qdisc_tbf_set_rate(qdisc, static_cast<int>(bytes_per_second), static_cast<int>(bucket_bytes), 0);
    result = rtnl_qdisc_add(socket_, qdisc, NLM_F_CREATE | NLM_F_REPLACE);
  }
  rtnl_qdisc_put(qdisc);
  check(result, "shape " + name + " with tbf (is sch_tbf in the kernel?)");
}

InterfaceCounters RouteSocket::counters(const std::string& name) {
  rtnl_link* raw = nullptr;
  check(rtnl_link_get_kernel(socket_, 0, name.c_str(), &raw), "find interface " + name);
  Link link(raw);
  InterfaceCounters counters;
  counters.bytes_sent = rtnl_link_get_stat(link.get(), RTNL_LINK_TX_BYTES);
  counters.bytes_received = rtnl_link_get_stat(link.get(), RTNL_LINK_RX_BYTES);
  counters.packets_dropped = rtnl_link_get_stat(link.get(), RTNL_LINK_TX_DROPPED);
  return counters;
}

}  // namespace distsgd::cluster
