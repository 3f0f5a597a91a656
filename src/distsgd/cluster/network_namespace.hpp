// Linux network namespaces held by file descriptor: one per emulated host, one for the switch between them.
// Nothing is named in /run/netns, so a namespace lives exactly as long as its descriptor or a process inside it:
// when the launcher dies (even by SIGKILL) and its children with it, every namespace of the run vanishes, and with
// it every interface, address and queueing discipline made inside.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace distsgd::cluster {

class NetworkNamespace {
 public:
  // A new namespace with only its loopback (down). Needs CAP_NET_ADMIN in the current user namespace.
  static NetworkNamespace create();

  NetworkNamespace(NetworkNamespace&& other) noexcept;
  NetworkNamespace& operator=(NetworkNamespace&& other) noexcept;
  NetworkNamespace(const NetworkNamespace&) = delete;
  NetworkNamespace& operator=(const NetworkNamespace&) = delete;
  ~NetworkNamespace();

  int fd() const { return fd_; }  // for setns(2) and netlink's IFLA_NET_NS_FD

  // Runs `work` on a thread that entered this namespace and waits for it; exceptions reach the caller. Sockets it
  // opens belong to this namespace for good, whichever thread uses them later.
  void run_inside(const std::function<void()>& work) const;

  // Runs a program (PATH is searched) inside this namespace and waits; throws Error with its stderr on failure.
  void run_command_inside(const std::vector<std::string>& argv) const;

 private:
  explicit NetworkNamespace(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Whether this process holds CAP_NET_ADMIN (in its own user namespace).
bool has_network_admin();

// Whether this process may build namespaces (CAP_NET_ADMIN). When it may not, tries to become root of a new user
// namespace (the kernel allows unprivileged users that); must then be called while the process has a single thread.
// Returns "" on success, otherwise one sentence saying what is missing.
std::string acquire_network_privileges();

}  // namespace distsgd::cluster
