#include "distsgd/comm/self_launch.hpp"

#include <memory>

#include "distsgd/comm/launcher.hpp"
#include "distsgd/comm/store_host.hpp"

namespace distsgd::comm {
namespace {

// Every emulated host is a fresh namespace, so the usual port is free on rank 0's.
constexpr int kEmulatedStorePort = 29500;

}  // namespace

int launch_self(int argc, char** argv, std::vector<std::string> labels,
                std::vector<std::pair<std::string, std::string>> extra_env, const EmulatedHosts* hosts,
                std::vector<bool> survivable) {
  LaunchSpec spec;
  spec.survivable = std::move(survivable);
  // Not argv[0]: the program may have been found through PATH, which the launcher does not search.
  spec.argv.push_back("/proc/self/exe");
  for (int i = 1; i < argc; ++i) spec.argv.push_back(argv[i]);
  spec.labels = std::move(labels);
  spec.may_fork = true;
  std::unique_ptr<StoreHost> store;  // outlives the children: they rendezvous through it
  if (hosts) {
    spec.network_namespace_fds = hosts->network_namespace_fd_of_rank;
    spec.failure_context = hosts->failure_context;
    spec.env = {{"MASTER_ADDR", hosts->master_addr},
                {"MASTER_PORT", std::to_string(kEmulatedStorePort)},
                {"GLOO_SOCKET_IFNAME", hosts->interface}};
  } else {
    spec.environment_after_start = [&store]() -> std::vector<std::pair<std::string, std::string>> {
      store = std::make_unique<StoreHost>();
      return {{"MASTER_ADDR", "127.0.0.1"},
              {"MASTER_PORT", std::to_string(store->port())},
              {"DISTSGD_STORE_EXTERNAL", "1"}};
    };
  }
  for (auto& variable : extra_env) spec.env.push_back(std::move(variable));
  return launch_local(spec);
}

}  // namespace distsgd::comm
