// `distsgd validate --holdout`: per network, the simulator calibrated (distsgd calibrate) on the grid's smallest
// worker count and scored only on the other rows: MAPE per algorithm, and per group of rows of one worker count and
// network, Kendall's tau between predicted and measured samples/s and whether the fastest algorithm was picked.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "distsgd/sim/calibration/measured_point_model.hpp"

namespace distsgd::experiment {

// From validate's measured rows (each with algorithm, algorithm_flags, workers, network, straggler, cluster,
// profile, measured_samples_per_second): the held-out report as JSON, and as text in `text`. Each network's
// calibrated cluster is written to DIR/holdout-NETWORK.json, with the clusters that fit its calibration rows as well
// (distsgd calibrate --noise), and each held-out row gets the range of samples/s they predict, widened by the row's
// own noise (two standard deviations), and whether its measurement lies inside.
// The discrete-event simulator's prediction of a row on a cluster file: {"samples_per_second": X} and, from a
// calibrated file, "samples_per_second_range": [low, high] over its consistent clusters.
using RowPredictor = std::function<nlohmann::json(const nlohmann::json& row, const std::string& cluster_path)>;
struct HoldoutOptions {
  // The cores every measured run shared (validate's runs all share this host's, as its predictions say with
  // --shared-cores); 0 leaves the cluster files'.
  double shared_cores = 0;
  // Rows with a straggler are never calibrated on: with a predictor they are held out too, scored apart
  // ("stragglers": MAPE per algorithm), as the ALADDIN paper's setting asks (calibrated on homogeneous runs, a slowed
  // worker predicted); without one they are left out.
  RowPredictor predict_des;
  // With predict_des: predict the held-out rows without a straggler by it too (validate --holdout-fidelity des),
  // not by the analytical models.
  bool des_for_every_row = false;
  // Calibrate with the discrete-event simulator (sim::des_model_of, these options) instead of the analytical models:
  // the model that then predicts the held-out rows fitted to the calibration rows itself (validate
  // --holdout-fidelity des). Tens of seconds a network where the analytical fit takes one.
  bool calibrate_with_des = false;
  sim::DesPointOptions des_points;
  std::ostream* progress = nullptr;  // how far a calibration got (sim::CalibrationRequest::progress)
  // The rows' relative noise; 0: from the calibration rows' repeats (validate --repeats), else 2%.
  double noise = 0;
};
nlohmann::json holdout_report(const nlohmann::json& rows, const std::string& dir, std::string& text,
                              const HoldoutOptions& options = {});

}  // namespace distsgd::experiment
