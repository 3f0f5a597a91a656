#include "distsgd/core/linear_fit.hpp"

#include "distsgd/core/error.hpp"

#include <cmath>

namespace distsgd {

LinearFit fit_relative_least_squares(const std::vector<double>& x, const std::vector<double>& y) {
  require(x.size() == y.size() && x.size() >= 2, "a line fit needs at least two points");
  // Weighted normal equations with weights 1/y^2.
  double s = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    require(y[i] > 0, "a relative line fit needs positive values");
    const double w = 1.0 / (y[i] * y[i]);
    s += w;
    sx += w * x[i];
    sy += w * y[i];
    sxx += w * x[i] * x[i];
    sxy += w * x[i] * y[i];
  }
  const double determinant = s * sxx - sx * sx;
  require(std::abs(determinant) > 1e-12 * s * sxx, "a line fit needs at least two distinct x values");
  LinearFit fit;
  fit.beta = (s * sxy - sx * sy) / determinant;
  fit.alpha = (sy - fit.beta * sx) / s;
  return fit;
}

}  // namespace distsgd
