// libFuzzer target: reading measured points (distsgd calibrate --points FILE.csv): the header, quoted fields, the
// numbers and the flags column (src/distsgd/sim/calibration/measured_points.cpp). A bad file must end in one
// distsgd::Error naming where; any other exception or a crash is a finding.
#include "distsgd/core/error.hpp"
#include "distsgd/sim/calibration/measured_points.hpp"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    distsgd::sim::points_from_csv_text(std::string(data, data + size), "points.csv");
  } catch (const distsgd::Error&) {
  }
  return 0;
}
