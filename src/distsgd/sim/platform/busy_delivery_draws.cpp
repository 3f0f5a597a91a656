#include "distsgd/sim/platform/busy_delivery_draws.hpp"

namespace distsgd::sim {

BusyDeliveryDraws::BusyDeliveryDraws(const ClusterDescription& cluster, int64_t ranks, uint64_t seed)
    : cluster_(&cluster),
      applies_(cluster.delays_busy_deliveries(ranks)),
      draws_(seed * 0x9e3779b97f4a7c15ULL + 17) {}  // a stream of its own, apart from the run's other draws

double BusyDeliveryDraws::next(int64_t computing_ranks) {
  if (!applies_) return 0;
  const double delay = cluster_->busy_delivery_seconds(std::uniform_real_distribution<double>(0, 1)(draws_));
  return computing_ranks >= cluster_->busy_delivery_cores ? delay : 0;
}

double BusyDeliveryDraws::mean(int64_t computing_ranks) const {
  return applies_ && computing_ranks >= cluster_->busy_delivery_cores ? cluster_->busy_delivery_mean_seconds() : 0;
}

}  // namespace distsgd::sim
