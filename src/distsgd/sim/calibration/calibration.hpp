// Calibration (distsgd calibrate): the figures of a cluster description that no data sheet gives (how much of the
// line rate the framework reaches, its per-message overhead, how much slower compute runs than the profile says, a
// per-iteration overhead, a parameter server's processing costs) fitted to measured throughput, so that the
// simulator predicts the points the fit did not see. The fit minimises the squared log error of the predicted
// samples/s over the points (a relative error, the same weight for a slow and a fast configuration), by Nelder-Mead
// over each unknown's logarithm within its range, from several starts. Whether the points determine an unknown is
// read off the fit's Jacobian: an unknown no point depends on, or one that every point sees only together with
// another (the two move the predictions alike), is not determined.
#pragma once
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "distsgd/sim/platform/cluster_description.hpp"

namespace distsgd::sim {

// One measured configuration: an algorithm at a worker count (with its settings) and the throughput it reached.
struct MeasuredPoint {
  std::string algorithm;
  int64_t workers = 0;
  double samples_per_second = 0;
  std::vector<std::string> flags;  // the algorithm's settings as train flags: {"--servers", "2", "--staleness", "3"}
  std::string origin;              // where it came from: "points.csv:4", a run directory
};

enum class Unknown {
  kComputeScale,             // compute_scale
  kLinkEfficiency,           // the links' rates as a fraction of the base's
  kIntraNodeEfficiency,      // the intra-node link's rate as a fraction of what link_efficiency makes of the base's
  kAlpha,                    // alpha_seconds (the intra-node alpha keeps its ratio to it)
  kInterferenceAlpha,        // interference_alpha_seconds
  kIterationOverhead,        // iteration_overhead_seconds
  kServerSecondsPerByte,     // server_seconds_per_byte
  kServerSecondsPerRequest,  // server_seconds_per_request
  kCommunicationCpu,         // communication_cpu_seconds_per_byte (hosts whose cores the ranks share)
};

// In the order the automatic choice tries them.
const std::vector<Unknown>& all_unknowns();
std::string name_of(Unknown unknown);
// By name; throws Error listing the names.
Unknown unknown_named(const std::string& name);
// A measurement that would determine it, for the refusal of an underdetermined fit.
std::string what_determines(Unknown unknown);

// The cluster with `value` for `unknown` (link efficiency multiplies the base's rates).
ClusterDescription with_unknown(ClusterDescription cluster, const ClusterDescription& base, Unknown unknown,
                                double value);
// The unknown's value in a cluster made from `base` (link efficiency: the ratio of the rates).
double value_in(const ClusterDescription& cluster, const ClusterDescription& base, Unknown unknown);

// Predicted samples/s of a point on a cluster.
using ThroughputModel = std::function<double(const MeasuredPoint&, const ClusterDescription&)>;

struct FittedUnknown {
  Unknown unknown;
  double value = 0;
  bool fitted = false;  // false: left at the base's value, `note` says why
  std::string note;
  // A fitted unknown's values that fit the points within their noise (CalibrationRequest::noise), the other unknowns
  // re-fitted at each end; both `value` where no range was asked for. An end `open` lies at the search's limit: the
  // points do not bound the unknown on that side (a cost hidden behind compute at every measured point).
  double low = 0, high = 0;
  bool low_open = false, high_open = false;
};

struct ClusterCalibration {
  ClusterDescription cluster;  // the base with the fitted figures
  std::vector<FittedUnknown> unknowns;
  std::vector<double> predicted;  // samples/s of each point on `cluster`
  double rms_relative_error = 0;  // of the points (the fit's own residuals)
  // With a noise: the clusters at the ends of the fitted unknowns' ranges, each fitting the points within that noise.
  // Predictions over them bound what the points allow (distsgd simulate prints the range).
  std::vector<ClusterDescription> consistent;
  // The noise the ranges used: the request's, or the fit's own residual where larger (sqrt(SSE / (n - k)) of n
  // points and k fitted unknowns: a model that cannot fit its points within their noise predicts no better).
  double noise = 0;
  double mean_squared_log_error = 0;  // of the points at the fit: the objective the fit minimised
  // With CalibrationRequest::explore_allreduce_latency, what the other allreduce latency (ring or tree) made of the
  // same points: its own fit's rms relative error, and what calibrate did with it (a sentence: taken, because the
  // points fit it better beyond their noise; its clusters joined `consistent`, because they fit as well; or ruled
  // out). Empty: not explored.
  std::string allreduce_latency_note;
};

struct CalibrationRequest {
  std::vector<MeasuredPoint> points;
  ClusterDescription base;
  // Empty: choose among all_unknowns() those the points determine (each in turn, kept when the points see it apart
  // from those already kept); given: exactly these, and a fit they do not determine is refused.
  std::vector<Unknown> unknowns;
  // Figures the base holds from a measurement of their own (validate: the communication's CPU per byte from the
  // calibration runs' communication threads): the automatic choice never fits them; reported as not fitted.
  std::vector<Unknown> measured;
  // The points' relative noise (one standard deviation). Above 0 the calibration also finds each fitted unknown's
  // range: the values at which the points' summed squared log error stays within 4 noise^2 of the best fit's (a
  // profile likelihood's two-sigma interval), the others re-fitted there; the fit's residual stands in for the noise
  // where it is larger.
  double noise = 0;
  // Fit the same unknowns with the other allreduce latency too (ClusterDescription::allreduce_latency: a ring's or a
  // tree's start-ups, which points at a few workers rarely tell apart): for points from another system whose
  // collective library the user did not state. The better fit is taken when the points tell them apart beyond their
  // noise (the request's, at least 2%), and the other's clusters join the ranges when they fit as well.
  bool explore_allreduce_latency = false;
  // For a model that is costly and not smooth (the discrete-event simulator's: each evaluation simulates every point,
  // and a rate moves by its events' order): the points are predicted on this many threads at once (the model must be
  // safe to call so), and the search stops once its candidates' objectives (mean squared log error) differ by less
  // than `resolution`. 0: the analytical models' search, to rounding.
  int64_t threads = 1;
  double resolution = 0;
  // The search's own thoroughness, which a costly model trades for time: the fit's starts besides the base's values
  // (corners of a cube around the middle of the ranges, up to 4), and the bisections that find a range's ends (8:
  // 1/256 of the unknown's search in its logarithm).
  int64_t corner_starts = 4;
  int64_t range_halvings = 8;
  // Where a long fit says how far it got (what it is fitting, evaluations so far, seconds), a line at most every
  // `progress_seconds`; none when null.
  std::ostream* progress = nullptr;
  double progress_seconds = 10;
};

// Throws Error (one line) when there are no points, when a named unknown is not determined by them (naming what to
// measure), or when a prediction fails.
ClusterCalibration calibrate(const CalibrationRequest& request, const ThroughputModel& model);

// A cluster file's "calibration" entries for the consistent clusters (load_consistent_clusters reads them back):
// "noise" and "consistent_clusters", each cluster named and sourced as `calibrated` (the file's own cluster).
void add_consistent_clusters(nlohmann::json& calibration_block, const ClusterCalibration& calibration,
                             const ClusterDescription& calibrated);

}  // namespace distsgd::sim
