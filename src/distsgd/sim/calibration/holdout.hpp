// Judging predictions the way a user needs them (distsgd validate --holdout): the simulator calibrated on the
// smallest worker count of a grid and scored only on the others, by relative error and by whether it ranks the
// algorithms as the measurements do (Kendall's tau, and whether the fastest was picked).
#pragma once
#include <cstdint>
#include <vector>

namespace distsgd::sim {

struct HoldoutSplit {
  std::vector<size_t> calibration;  // indices of the rows at the smallest worker count
  std::vector<size_t> held_out;     // every other row; never one of the calibration rows
};
HoldoutSplit split_at_smallest_workers(const std::vector<int64_t>& workers);

// Kendall's tau-b of two equally long lists (ties counted as neither concordant nor discordant, and the
// denominator corrected for them); 0 for fewer than two pairs that are not tied.
double kendall_tau(const std::vector<double>& a, const std::vector<double>& b);

// The index of the largest value (the first of equals).
size_t index_of_largest(const std::vector<double>& values);

}  // namespace distsgd::sim
