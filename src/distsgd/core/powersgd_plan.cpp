#include "distsgd/core/powersgd_plan.hpp"

#include <algorithm>
#include <utility>

namespace distsgd {
namespace {

int64_t product(const std::vector<int64_t>& shape, size_t from) {
  int64_t p = 1;
  for (size_t i = from; i < shape.size(); ++i) p *= shape[i];
  return p;
}

// The hook's _should_compress, at the clamped rank.
bool worth_compressing(int64_t rows, int64_t cols, int64_t rank, double min_compression_rate) {
  return static_cast<double>((rows + cols) * rank) * min_compression_rate < static_cast<double>(rows * cols);
}

}  // namespace

double PowerSgdPlan::matmul_flops() const {
  double flops = 0;
  for (const auto& t : compressed) flops += 3 * 2.0 * static_cast<double>(t.rows * t.cols * t.rank);
  return flops;
}

PowerSgdPlan plan_powersgd(const std::vector<std::vector<int64_t>>& shapes, int64_t rank, double min_compression_rate) {
  PowerSgdPlan plan;
  std::vector<std::pair<int64_t, int64_t>> shape_order;  // matrix shapes, first appearance first
  std::vector<LowRankTensor> candidates;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& shape = shapes[i];
    const int64_t numel = product(shape, 0);
    plan.total_floats += numel;
    if (shape.size() >= 2) {
      LowRankTensor t;
      t.index = static_cast<int64_t>(i);
      t.rows = shape[0];
      t.cols = product(shape, 1);
      t.rank = std::min({t.rows, t.cols, rank});
      if (t.rank >= 1 && worth_compressing(t.rows, t.cols, t.rank, min_compression_rate)) {
        if (std::find(shape_order.begin(), shape_order.end(), std::make_pair(t.rows, t.cols)) == shape_order.end()) {
          shape_order.emplace_back(t.rows, t.cols);
        }
        candidates.push_back(t);
        continue;
      }
    }
    plan.uncompressed.push_back(static_cast<int64_t>(i));
    plan.uncompressed_floats += numel;
  }
  for (const auto& shape : shape_order) {
    for (const auto& t : candidates) {
      if (t.rows != shape.first || t.cols != shape.second) continue;
      plan.compressed.push_back(t);
      plan.p_floats += t.rows * t.rank;
      plan.q_floats += t.cols * t.rank;
    }
  }
  return plan;
}

int64_t largest_compressing_rank(const std::vector<std::vector<int64_t>>& shapes, double min_compression_rate) {
  int64_t largest = 0;
  for (const auto& shape : shapes) {
    if (shape.size() < 2) continue;
    const int64_t rows = shape[0], cols = product(shape, 1);
    for (int64_t r = std::min(rows, cols); r > largest; --r) {
      if (worth_compressing(rows, cols, r, min_compression_rate)) {
        largest = r;
        break;
      }
    }
  }
  return largest;
}

}  // namespace distsgd
