// Communication cost formulas of spec/simulator.md ("Communication costs"), after Thakur, Rabenseifner and Gropp:
// alpha is the start-up latency (s), beta the seconds per byte, gamma the reduction seconds per byte, P processes,
// m bytes. Measured fits (distsgd commbench, also --net) give alpha and beta per primitive.
#pragma once
#include <cstdint>

namespace distsgd::sim {

struct LinkCost {
  double alpha = 0;  // s
  double beta = 0;   // s per byte
  double gamma = 0;  // s per byte reduced
};

double point_to_point_seconds(const LinkCost& c, double bytes);
double ring_allreduce_seconds(const LinkCost& c, int64_t processes, double bytes);
double halving_doubling_allreduce_seconds(const LinkCost& c, int64_t processes, double bytes);
double ring_reduce_scatter_seconds(const LinkCost& c, int64_t processes, double bytes);
double ring_allgather_seconds(const LinkCost& c, int64_t processes, double bytes);
double pairwise_alltoall_seconds(const LinkCost& c, int64_t processes, double bytes);

// P workers each push m bytes, split over S server shards: each worker's link carries m, each server's P*m/S
// (incast at the server's NIC); the slower of the two sets the time. Pull is symmetric.
double ps_push_seconds(double alpha, int64_t workers, int64_t servers, double bytes, double worker_bytes_per_second,
                       double server_bytes_per_second);

}  // namespace distsgd::sim
