#include "distsgd/comm/self_launch.hpp"

#include "distsgd/comm/launcher.hpp"
#include "distsgd/comm/store_host.hpp"

namespace distsgd::comm {

int launch_self(int argc, char** argv, std::vector<std::string> labels,
                std::vector<std::pair<std::string, std::string>> extra_env) {
  StoreHost store;  // outlives the children: they rendezvous through it
  LaunchSpec spec;
  // Not argv[0]: the program may have been found through PATH, which the launcher does not search.
  spec.argv.push_back("/proc/self/exe");
  for (int i = 1; i < argc; ++i) spec.argv.push_back(argv[i]);
  spec.labels = std::move(labels);
  spec.env = {{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(store.port())}};
  for (auto& variable : extra_env) spec.env.push_back(std::move(variable));
  return launch_local(spec);
}

}  // namespace distsgd::comm
