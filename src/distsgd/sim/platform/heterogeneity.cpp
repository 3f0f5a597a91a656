#include "distsgd/sim/platform/heterogeneity.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "distsgd/core/error.hpp"

namespace distsgd::sim {
namespace {

double factor_of(const std::vector<std::pair<int64_t, double>>& factors, int64_t rank) {
  double f = 1;
  for (const auto& [r, factor] : factors) {
    if (r == rank) f = factor;
  }
  return f;
}

std::string number_text(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

void check_ranks(const std::vector<std::pair<int64_t, double>>& factors, int64_t workers, const std::string& flag,
                 double minimum) {
  for (const auto& [rank, factor] : factors) {
    const std::string given = flag + " " + std::to_string(rank) + ":" + number_text(factor);
    require(rank >= 0 && rank < workers, given + ": there is no worker " + std::to_string(rank) + " (workers 0-" +
                                             std::to_string(workers - 1) + ")");
    require(std::isfinite(factor) && factor >= minimum,
            given + ": the factor must be at least " + number_text(minimum));
  }
}

// splitmix64: independent streams for (seed, rank).
uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

void check(const Heterogeneity& h, int64_t workers) {
  check_ranks(h.compute_factors, workers, "--compute-multiplier", 0.001);
  check_ranks(h.link_factors, workers, "--link-multiplier", 0.001);
  check_ranks(h.slowdowns, workers, "--slowdown",
              1);  // as distsgd train: a factor below 1 is not a slowdown
  require(std::isfinite(h.jitter_cv) && h.jitter_cv >= 0, "--jitter-cv must be a non-negative number");
  require(h.straggler_probability >= 0 && h.straggler_probability <= 1, "--straggler-prob must be in [0, 1]");
  require(std::isfinite(h.straggler_factor) && h.straggler_factor >= 1, "--straggler-factor must be at least 1");
  require(h.straggler_iterations >= 1, "--straggler-iterations must be at least 1");
}

WorkerVariability::WorkerVariability(const Heterogeneity& h, int64_t rank, int64_t workers, uint64_t seed)
    : h_(h),
      random_(mix(mix(seed) ^ static_cast<uint64_t>(rank))),
      compute_factor_(factor_of(h.compute_factors, rank)),
      link_factor_(factor_of(h.link_factors, rank)),
      slowdown_(factor_of(h.slowdowns, rank)) {}

double WorkerVariability::uniform() { return std::uniform_real_distribution<double>(0, 1)(random_); }

double WorkerVariability::next_iteration_factor() {
  double factor = compute_factor_;
  if (h_.jitter_cv > 0) {
    if (h_.jitter_kind == JitterKind::kLognormal) {
      // Mean 1, coefficient of variation cv: sigma^2 = ln(1 + cv^2), mu = -sigma^2 / 2.
      const double sigma = std::sqrt(std::log1p(h_.jitter_cv * h_.jitter_cv));
      factor *= std::lognormal_distribution<double>(-sigma * sigma / 2, sigma)(random_);
    } else {
      factor *= std::max(0.05, std::normal_distribution<double>(1, h_.jitter_cv)(random_));
    }
  }
  if (h_.straggler_probability > 0) {
    if (straggling_left_ == 0 && uniform() < h_.straggler_probability) straggling_left_ = h_.straggler_iterations;
    if (straggling_left_ > 0) {
      --straggling_left_;
      factor *= h_.straggler_factor;
    }
  }
  return factor;
}

}  // namespace distsgd::sim
