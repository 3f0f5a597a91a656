// Seeded draws from a cluster's busy receivers' delay (ClusterDescription::busy_delivery): the discrete-event
// simulator and the virtual cluster both take one per message or ring step, from the same seed, so one run's
// delays are the same sequence in either engine.
#pragma once
#include <cstdint>
#include <random>

#include "distsgd/sim/platform/cluster_description.hpp"

namespace distsgd::sim {

class BusyDeliveryDraws {
 public:
  // `cluster` must outlive the draws. `ranks`: every rank of the run (workers and servers).
  BusyDeliveryDraws(const ClusterDescription& cluster, int64_t ranks, uint64_t seed);
  // Whether the delay applies to this run (ClusterDescription::delays_busy_deliveries).
  bool applies() const { return applies_; }
  // The next message's extra delay in seconds; 0 where the delay does not apply (and then nothing is drawn).
  double next();

 private:
  const ClusterDescription* cluster_;
  bool applies_;
  std::mt19937_64 draws_;
};

}  // namespace distsgd::sim
