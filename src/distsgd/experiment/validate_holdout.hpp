// `distsgd validate --holdout`: per network, the simulator calibrated (distsgd calibrate) on the grid's smallest
// worker count and scored only on the other rows: MAPE per algorithm, and per group of rows of one worker count and
// network, Kendall's tau between predicted and measured samples/s and whether the fastest algorithm was picked.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace distsgd::experiment {

// From validate's measured rows (each with algorithm, algorithm_flags, workers, network, straggler, cluster,
// profile, measured_samples_per_second): the held-out report as JSON, and as text in `text`. Each network's
// calibrated cluster is written to DIR/holdout-NETWORK.json. `shared_cores`: the cores every measured run shared
// (validate's runs all share this host's, as its predictions say with --shared-cores); 0 leaves the cluster files'.
// Rows with a straggler are never calibrated on: with `predict_slowed` (the discrete-event simulator's samples/s of
// such a row on the calibrated cluster file) they are held out too, scored apart ("stragglers": MAPE per algorithm),
// as the ALADDIN paper's setting asks (calibrated on homogeneous runs, a slowed worker predicted).
// Each held-out row also gets the range of samples/s the clusters that fit its network's calibration rows within
// their noise predict (distsgd calibrate --noise), widened by the row's own measurement noise (two standard
// deviations), and whether its measurement lies inside. `noise`: the rows' relative noise; 0: from the calibration
// rows' repeats (validate --repeats), else 2%.
using SlowedRowPredictor = std::function<double(const nlohmann::json& row, const std::string& cluster_path)>;
nlohmann::json holdout_report(const nlohmann::json& rows, const std::string& dir, std::string& text,
                              int64_t shared_cores = 0, const SlowedRowPredictor& predict_slowed = nullptr,
                              double noise = 0);

}  // namespace distsgd::experiment
