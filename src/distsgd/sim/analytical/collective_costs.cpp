#include "distsgd/sim/analytical/collective_costs.hpp"

#include <algorithm>
#include <cmath>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {
namespace {

// (P-1)/P: the share of the message each process sends (and receives) in one pass of a ring.
double ring_share(int64_t processes) {
  require(processes >= 1, "a collective needs at least one process");
  return static_cast<double>(processes - 1) / static_cast<double>(processes);
}

}  // namespace

double point_to_point_seconds(const LinkCost& c, double bytes) { return c.alpha + bytes * c.beta; }

double ring_allreduce_seconds(const LinkCost& c, int64_t processes, double bytes) {
  const double share = ring_share(processes);
  return 2.0 * static_cast<double>(processes - 1) * c.alpha + 2.0 * share * bytes * c.beta + share * bytes * c.gamma;
}

double halving_doubling_allreduce_seconds(const LinkCost& c, int64_t processes, double bytes) {
  const double share = ring_share(processes);
  return 2.0 * std::log2(static_cast<double>(processes)) * c.alpha + 2.0 * share * bytes * c.beta +
         share * bytes * c.gamma;
}

double ring_reduce_scatter_seconds(const LinkCost& c, int64_t processes, double bytes) {
  const double share = ring_share(processes);
  return static_cast<double>(processes - 1) * c.alpha + share * bytes * c.beta + share * bytes * c.gamma;
}

double ring_allgather_seconds(const LinkCost& c, int64_t processes, double bytes) {
  const double share = ring_share(processes);
  return static_cast<double>(processes - 1) * c.alpha + share * bytes * c.beta;
}

double pairwise_alltoall_seconds(const LinkCost& c, int64_t processes, double bytes) {
  return ring_allgather_seconds(c, processes, bytes);  // the same volume and steps, without reduction
}

double ps_push_seconds(double alpha, int64_t workers, int64_t servers, double bytes, double worker_bytes_per_second,
                       double server_bytes_per_second) {
  require(workers >= 1 && servers >= 1, "a parameter-server push needs at least one worker and one server");
  require(worker_bytes_per_second > 0 && server_bytes_per_second > 0, "link rates must be positive");
  const double at_worker = bytes / worker_bytes_per_second;
  const double at_server =
      static_cast<double>(workers) * bytes / (static_cast<double>(servers) * server_bytes_per_second);
  return alpha + std::max(at_worker, at_server);
}

}  // namespace distsgd::sim
