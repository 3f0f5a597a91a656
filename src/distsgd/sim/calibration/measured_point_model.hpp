// The analytical model of measured points (sim/calibration/measured_points.hpp): each point's settings parsed once, as
// `distsgd simulate` takes them, and its throughput predicted on a candidate cluster. calibrate fits with it;
// validate --holdout predicts held-out rows with it.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "distsgd/sim/calibration/calibration.hpp"
#include "distsgd/sim/calibration/measured_points.hpp"
#include "distsgd/sim/platform/model_profile.hpp"

namespace distsgd::sim {

// Whether a point's flag is an algorithm setting the simulator takes: not where or how the simulator runs
// (--workers, --cluster, --fidelity, ...) and not --algo, which the point names already.
bool is_point_setting(const std::string& flag);

// The model of `points` (each with its profile). Flags the simulator does not take are added to `ignored`; a point
// with --slowdown is refused (the closed forms have no stragglers). The model must be called with elements of
// `points` itself (it finds their settings by position).
ThroughputModel analytical_model_of(const std::vector<MeasuredPoint>& points, const std::vector<ModelProfile>& profiles,
                                    std::set<std::string>& ignored);

}  // namespace distsgd::sim
