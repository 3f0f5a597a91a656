#include "distsgd/sim/analytical/closed_network.hpp"

#include <algorithm>
#include <cmath>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {

double closed_network_cycle_seconds(double think, const std::vector<QueueingStation>& stations,
                                    const std::vector<QueueingLeg>& legs) {
  require(think >= 0, "closed_network_cycle_seconds: negative think time");
  for (const auto& station : stations) {
    require(station.demand >= 0 && station.visitors >= 1, "closed_network_cycle_seconds: a station without visitors");
  }
  std::vector<double> queue(stations.size(), 0.0), response(stations.size(), 0.0);
  double cycle = think;
  // The fixed point by damped iteration (Schweitzer's iteration converges; the damping keeps a saturated station's
  // queue from overshooting).
  for (int round = 0; round < 10000; ++round) {
    for (std::size_t k = 0; k < stations.size(); ++k) {
      const auto& s = stations[k];
      response[k] = s.demand * (1 + queue[k] * (s.visitors - 1) / s.visitors);
    }
    double next = think;
    for (const auto& leg : legs) {
      double slowest = 0;
      for (const std::size_t k : leg.stations) {
        require(k < stations.size(), "closed_network_cycle_seconds: a leg crosses an unknown station");
        slowest = std::max(slowest, response[k]);
      }
      next += leg.latency + slowest;
    }
    if (next <= 0) return 0;
    // Each visitor spends its response time of every cycle at the station.
    for (std::size_t k = 0; k < stations.size(); ++k) {
      queue[k] = 0.5 * queue[k] + 0.5 * stations[k].visitors * response[k] / next;
    }
    const bool settled = std::abs(next - cycle) <= 1e-13 * next;
    cycle = next;
    if (settled) break;
  }
  return cycle;
}

}  // namespace distsgd::sim
