// Where a rendezvous store listens. c10d's TCPStore in libtorch 1.13 binds its listening socket to the wildcard
// address (every interface) and has no option to choose one; distsgd's launcher wants its store on loopback only,
// and a cluster's rank 0 on the address the user gave as MASTER_ADDR. While a ListenOn object lives, a bind() of the
// wildcard address made by the same thread binds the chosen IPv4 address instead (an IPv6 socket: its IPv4-mapped
// form, which still takes the IPv4 connections the ranks make). Binds of other addresses, and binds by other
// threads, are left alone.
#pragma once
#include <optional>
#include <string>

namespace distsgd::comm {

class ListenOn {
 public:
  explicit ListenOn(const std::string& ipv4_address);  // throws distsgd::Error when it is not a dotted IPv4 address
  ~ListenOn();
  ListenOn(const ListenOn&) = delete;
  ListenOn& operator=(const ListenOn&) = delete;
};

// The address a store hosted for MASTER_ADDR=`master_addr` should listen on: the address itself when it is a
// dotted IPv4 address of this host, 127.0.0.1 for "localhost", and nothing (every interface, as PyTorch does) for a
// host name, whose address here may differ from the one the other hosts resolve it to, or an address this host
// cannot bind (NAT).
std::optional<std::string> store_listen_address(const std::string& master_addr);

}  // namespace distsgd::comm
