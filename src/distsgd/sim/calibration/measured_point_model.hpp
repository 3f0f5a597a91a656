// The analytical and discrete-event models of measured points (sim/calibration/measured_points.hpp): each point's
// settings parsed once, as `distsgd simulate` takes them, and its throughput predicted on a candidate cluster.
// calibrate fits with either (--fidelity); validate --holdout predicts held-out rows with them.
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

// The discrete-event simulator's model of `points`: slower than the closed forms (a short simulated run per point and
// cluster) but with what they lack: stragglers (a point's --slowdown), the order of messages and waits, the cores'
// sharing as it happens. As analytical_model_of otherwise.
struct DesPointOptions {
  int64_t iterations = 60;  // simulated per point after the warm-up: enough for a steady rate at a few workers
  int64_t warmup = 10;
  int64_t seed = 1;
};
// The search settings to fit des_model_of with: the points on every core; a search that stops at 1e-6 of mean
// squared log error (a point's simulated rate moves by about 0.1% with its events' order, and a search for less only
// follows that); two corner starts besides the base's values and range ends to 1/64 (on the grid's 10 points: the
// same fit and ranges within 0.2 of their width, in a third of the time; no corner start missed the fit there).
void search_as_for_des(CalibrationRequest& request);
ThroughputModel des_model_of(const std::vector<MeasuredPoint>& points, const std::vector<ModelProfile>& profiles,
                             std::set<std::string>& ignored, const DesPointOptions& options = {});

}  // namespace distsgd::sim
