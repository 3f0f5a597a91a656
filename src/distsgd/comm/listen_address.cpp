#include "distsgd/comm/listen_address.hpp"

#include "distsgd/core/error.hpp"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace distsgd::comm {
namespace {

// The address binds of the wildcard are redirected to on this thread (s_addr in network order; 0: none).
thread_local in_addr_t redirect_to = 0;

using BindFunction = int (*)(int, const struct sockaddr*, socklen_t);

BindFunction real_bind() {
  static const auto function = reinterpret_cast<BindFunction>(dlsym(RTLD_NEXT, "bind"));
  return function;
}

}  // namespace

ListenOn::ListenOn(const std::string& ipv4_address) {
  in_addr address{};
  require(inet_pton(AF_INET, ipv4_address.c_str(), &address) == 1,
          "cannot listen on '" + ipv4_address + "': not an IPv4 address");
  redirect_to = address.s_addr;
}

ListenOn::~ListenOn() { redirect_to = 0; }

std::optional<std::string> store_listen_address(const std::string& master_addr) {
  if (master_addr == "localhost") return "127.0.0.1";
  sockaddr_in address{};
  address.sin_family = AF_INET;
  if (inet_pton(AF_INET, master_addr.c_str(), &address.sin_addr) != 1) return std::nullopt;
  // An address of another machine (behind NAT, say) cannot be bound here: then every interface, as before.
  const int probe = socket(AF_INET, SOCK_STREAM, 0);
  if (probe < 0) return std::nullopt;
  const bool local = real_bind()(probe, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
  close(probe);
  return local ? std::optional<std::string>(master_addr) : std::nullopt;
}

}  // namespace distsgd::comm

// Interposes libc's bind() for the whole program (the executable's definition comes first in symbol lookup, also
// for libtorch's calls); it changes nothing unless a ListenOn is alive on the calling thread.
extern "C" int bind(int fd, const struct sockaddr* address, socklen_t length) noexcept {
  using distsgd::comm::redirect_to;
  const auto real = distsgd::comm::real_bind();
  if (redirect_to == 0 || address == nullptr) return real(fd, address, length);
  if (address->sa_family == AF_INET && length >= sizeof(sockaddr_in)) {
    sockaddr_in changed;
    std::memcpy(&changed, address, sizeof changed);
    if (changed.sin_addr.s_addr == htonl(INADDR_ANY)) {
      changed.sin_addr.s_addr = redirect_to;
      return real(fd, reinterpret_cast<const sockaddr*>(&changed), sizeof changed);
    }
  } else if (address->sa_family == AF_INET6 && length >= sizeof(sockaddr_in6)) {
    sockaddr_in6 changed;
    std::memcpy(&changed, address, sizeof changed);
    if (std::memcmp(&changed.sin6_addr, &in6addr_any, sizeof(in6_addr)) == 0) {
      // ::ffff:a.b.c.d
      std::memset(&changed.sin6_addr, 0, sizeof(in6_addr));
      changed.sin6_addr.s6_addr[10] = 0xff;
      changed.sin6_addr.s6_addr[11] = 0xff;
      std::memcpy(&changed.sin6_addr.s6_addr[12], &redirect_to, 4);
      return real(fd, reinterpret_cast<const sockaddr*>(&changed), sizeof changed);
    }
  }
  return real(fd, address, length);
}
