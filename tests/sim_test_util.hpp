// Helpers the simulator's tests share.
#pragma once
#include "distsgd/sim/platform/cluster_description.hpp"

namespace distsgd::testing {

// A cluster whose every worker and server link runs at `bytes_per_second`, `alpha_seconds` per message.
inline sim::ClusterDescription uniform_link(double bytes_per_second, double alpha_seconds = 0) {
  sim::ClusterDescription c;
  c.name = "test";
  c.worker_bytes_per_second = c.server_bytes_per_second = bytes_per_second;
  c.alpha_seconds = alpha_seconds;
  return c;
}

}  // namespace distsgd::testing
