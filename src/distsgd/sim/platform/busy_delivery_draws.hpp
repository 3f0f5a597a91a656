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
  // The next message's extra delay in seconds, for a message delivered while `computing_ranks` ranks of the host
  // compute: a draw from the measured distribution where they take every core (ClusterDescription::
  // busy_delivery_cores; the receiver waits to be scheduled, as when commbench measured it with every rank
  // computing), 0 where a core is free. A draw is taken either way, so the n-th message gets the n-th draw whatever the
  // timeline; 0 and nothing drawn where the delay does not apply to the run.
  double next(int64_t computing_ranks);
  // The distribution's mean under the same rule (nothing drawn): a collective's delay per step in the flow model.
  double mean(int64_t computing_ranks) const;

 private:
  const ClusterDescription* cluster_;
  bool applies_;
  std::mt19937_64 draws_;
};

}  // namespace distsgd::sim
