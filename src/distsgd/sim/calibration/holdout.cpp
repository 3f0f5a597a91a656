#include "distsgd/sim/calibration/holdout.hpp"

#include <algorithm>
#include <cmath>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {

HoldoutSplit split_at_smallest_workers(const std::vector<int64_t>& workers) {
  require(!workers.empty(), "holdout: no rows");
  const int64_t smallest = *std::min_element(workers.begin(), workers.end());
  HoldoutSplit split;
  for (size_t i = 0; i < workers.size(); ++i)
    (workers[i] == smallest ? split.calibration : split.held_out).push_back(i);
  return split;
}

double kendall_tau(const std::vector<double>& a, const std::vector<double>& b) {
  require(a.size() == b.size(), "kendall_tau: lists of different lengths");
  double concordant = 0, discordant = 0, tied_a = 0, tied_b = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = i + 1; j < a.size(); ++j) {
      const double x = a[i] - a[j], y = b[i] - b[j];
      if (x == 0 && y == 0) continue;
      if (x == 0) {
        ++tied_a;
      } else if (y == 0) {
        ++tied_b;
      } else if ((x > 0) == (y > 0)) {
        ++concordant;
      } else {
        ++discordant;
      }
    }
  }
  const double denominator = std::sqrt((concordant + discordant + tied_a) * (concordant + discordant + tied_b));
  return denominator > 0 ? (concordant - discordant) / denominator : 0;
}

size_t index_of_largest(const std::vector<double>& values) {
  require(!values.empty(), "index_of_largest: no values");
  return static_cast<size_t>(std::max_element(values.begin(), values.end()) - values.begin());
}

double median_of(std::vector<double> values) {
  require(!values.empty(), "median_of: no values");
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::vector<double> deviations_from_median(const std::vector<double>& repeats) {
  const double median = median_of(repeats);
  std::vector<double> deviations;
  for (const double x : repeats) deviations.push_back(std::fabs(x / median - 1));
  return deviations;
}

RepeatAgreement repeat_agreement(const std::vector<std::vector<double>>& repeats) {
  require(repeats.size() >= 2, "repeat_agreement: fewer than two repeats");
  const size_t rows = repeats.front().size();
  require(rows > 0, "repeat_agreement: no rows");
  for (const auto& r : repeats) require(r.size() == rows, "repeat_agreement: repeats of different rows");
  RepeatAgreement agreement;
  double tau_sum = 0;
  int64_t pairs = 0;
  for (size_t a = 0; a < repeats.size(); ++a) {
    for (size_t b = a + 1; b < repeats.size(); ++b, ++pairs) tau_sum += kendall_tau(repeats[a], repeats[b]);
    if (index_of_largest(repeats[a]) != index_of_largest(repeats.front())) agreement.same_top = false;
  }
  agreement.kendall_tau = tau_sum / static_cast<double>(pairs);
  double deviation_sum = 0;
  for (size_t i = 0; i < rows; ++i) {
    std::vector<double> row;
    for (const auto& r : repeats) row.push_back(r[i]);
    for (const double d : deviations_from_median(row)) deviation_sum += d;
  }
  agreement.deviation = deviation_sum / static_cast<double>(rows * repeats.size());
  return agreement;
}

double kendall_tau_against_each_repeat(const std::vector<std::vector<double>>& repeats,
                                       const std::vector<double>& predicted) {
  require(!repeats.empty(), "kendall_tau_against_each_repeat: no repeats");
  double sum = 0;
  for (const auto& r : repeats) {
    require(r.size() == predicted.size(), "kendall_tau_against_each_repeat: a prediction per row");
    sum += kendall_tau(predicted, r);
  }
  return sum / static_cast<double>(repeats.size());
}

SettledPairs settled_pairs(const std::vector<std::vector<double>>& repeats, const std::vector<double>& predicted) {
  require(!repeats.empty(), "settled_pairs: no repeats");
  for (const auto& r : repeats) require(r.size() == predicted.size(), "settled_pairs: a prediction per row");
  SettledPairs pairs;
  const auto sign = [](double a, double b) { return (a > b) - (a < b); };
  for (size_t i = 0; i < predicted.size(); ++i) {
    for (size_t j = i + 1; j < predicted.size(); ++j) {
      const int order = sign(repeats.front()[i], repeats.front()[j]);
      const bool settled = order != 0 && std::all_of(repeats.begin(), repeats.end(),
                                                     [&](const auto& r) { return sign(r[i], r[j]) == order; });
      if (!settled) continue;
      ++pairs.settled;
      if (sign(predicted[i], predicted[j]) == order) ++pairs.predicted_alike;
    }
  }
  return pairs;
}

}  // namespace distsgd::sim
