// Judging predictions the way a user needs them (distsgd validate --holdout): the simulator calibrated on the
// smallest worker count of a grid and scored only on the others, by relative error and by whether it ranks the
// algorithms as the measurements do (Kendall's tau, and whether the fastest was picked).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace distsgd::sim {

struct HoldoutSplit {
  std::vector<std::size_t> calibration;  // indices of the rows at the smallest worker count
  std::vector<std::size_t> held_out;     // every other row; never one of the calibration rows
};
HoldoutSplit split_at_smallest_workers(const std::vector<int64_t>& workers);

// Kendall's tau-b of two equally long lists (ties counted as neither concordant nor discordant, and the
// denominator corrected for them); 0 for fewer than two pairs that are not tied.
double kendall_tau(const std::vector<double>& a, const std::vector<double>& b);

// The index of the largest value (the first of equals).
std::size_t index_of_largest(const std::vector<double>& values);

// How far repeated measurements of the same rows agree with each other (validate --repeats): the ceiling a
// prediction scored against one measurement per row is judged by.
struct RepeatAgreement {
  double kendall_tau = 0;  // the mean over pairs of repeats of their rank correlation
  double deviation = 0;    // the mean over rows and repeats of |repeat / median of the row's repeats - 1|
  bool same_top = true;    // the same row is the fastest in every repeat
};
// `repeats[r][i]`: repeat r's measurement of row i; at least two repeats, each of the same rows (throws Error).
RepeatAgreement repeat_agreement(const std::vector<std::vector<double>>& repeats);

// The pairs of rows that every repeat orders the same way (the measurements settle which of the two is faster), and
// how many of those `predicted` orders alike: a ranking scored only where the measurements can judge it.
// `repeats[r][i]` as for repeat_agreement; `predicted[i]` per row (throws Error on other sizes).
struct SettledPairs {
  int64_t settled = 0;
  int64_t predicted_alike = 0;
};
SettledPairs settled_pairs(const std::vector<std::vector<double>>& repeats, const std::vector<double>& predicted);

// The mean over repeats of Kendall's tau between `predicted` and that one repeat: how well the prediction ranks a
// single run, to set beside how well one run ranks another (RepeatAgreement::kendall_tau). Against the median of
// the repeats a prediction is scored against less noise than two runs are against each other; against single runs
// the two figures are alike. `repeats[r][i]` as for repeat_agreement (throws Error on other sizes).
double kendall_tau_against_each_repeat(const std::vector<std::vector<double>>& repeats,
                                       const std::vector<double>& predicted);

// The median (of an even count, the mean of the middle two); throws Error when empty.
double median_of(std::vector<double> values);

// Each of one row's repeated measurements as |repeat / their median - 1|; throws Error when empty.
std::vector<double> deviations_from_median(const std::vector<double>& repeats);

}  // namespace distsgd::sim
