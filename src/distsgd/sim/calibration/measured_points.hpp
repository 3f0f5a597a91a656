// Measured throughput typed from another system's logs or a paper, for distsgd calibrate: a CSV file whose header
// names its columns, `algorithm,workers,samples_per_second` and optionally `flags` (the algorithm's settings as
// `distsgd train` flags, e.g. "--servers 2 --staleness 3"), one configuration per line:
//   algorithm,workers,samples_per_second,flags
//   arsgd,2,1830,--overlap none
//   bsp,4,2950,--servers 2
// Blank lines and lines starting with '#' are skipped; a field may be double-quoted.
#pragma once
#include <string>
#include <vector>

#include "distsgd/sim/calibration/calibration.hpp"

namespace distsgd::sim {

// Throws Error naming the file, the line and the column: "points.csv:4: column 3 (samples_per_second): expected a
// positive number, got 'fast'".
std::vector<MeasuredPoint> read_points_csv(const std::string& path);
std::vector<MeasuredPoint> points_from_csv_text(const std::string& text, const std::string& source);

}  // namespace distsgd::sim
