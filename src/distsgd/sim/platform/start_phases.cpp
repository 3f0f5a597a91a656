#include "distsgd/sim/platform/start_phases.hpp"

#include "distsgd/catalog/algorithm_catalog.hpp"

namespace distsgd::sim {

double lone_iteration_seconds(const ModelProfile& profile, const ClusterDescription& cluster) {
  const double compute =
      profile.data_seconds + profile.h2d_seconds + profile.forward_seconds() + profile.backward_seconds();
  return compute + 2 * profile.gradient_bytes() / cluster.worker_bytes_per_second;
}

double first_iteration_start_seconds(const std::string& algorithm, const ModelProfile& profile,
                                     const ClusterDescription& cluster, int64_t worker, int64_t workers) {
  const auto* entry = catalog::find(algorithm);
  if (entry == nullptr || !entry->independent_workers || workers <= 1) return 0;
  return static_cast<double>(worker) / static_cast<double>(workers) * lone_iteration_seconds(profile, cluster);
}

}  // namespace distsgd::sim
