// Least-squares fit of a line t(m) = alpha + beta * m, for communication cost models (spec: simulator.md).
#pragma once
#include <vector>

namespace distsgd {

struct LinearFit {
  double alpha = 0;  // intercept (for communication: latency in seconds)
  double beta = 0;   // slope (seconds per byte)
};

// Minimizes the sum of squared *relative* errors ((alpha + beta*x - y) / y)^2: message times span four or more
// orders of magnitude, and plain least squares would let the largest messages decide alpha alone (often making it
// negative). Needs at least two distinct x and positive y; throws distsgd::Error otherwise.
LinearFit fit_relative_least_squares(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace distsgd
