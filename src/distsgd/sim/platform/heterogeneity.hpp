// Heterogeneous workers for the discrete-event simulator (spec/simulator.md, "Per-algorithm models", Heterogeneity):
// per-worker compute and link factors, random per-iteration jitter, straggler episodes, and `--slowdown RANK:FACTOR`
// exactly as `distsgd train --slowdown` (train/worker_loop.cpp: after backward the worker sleeps FACTOR - 1 times
// the time since its forward started, as its own "slowdown" span). Every factor is a time factor: 2 means twice as
// long (a link at half its rate).
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace distsgd::sim {

enum class JitterKind { kLognormal, kNormal };

struct Heterogeneity {
  std::vector<std::pair<int64_t, double>> compute_factors;  // RANK:FACTOR, others 1
  std::vector<std::pair<int64_t, double>> link_factors;     // RANK:FACTOR, others 1
  std::vector<std::pair<int64_t, double>> slowdowns;        // RANK:FACTOR, as distsgd train --slowdown
  // Each iteration's forward and backward times a random factor of mean 1 and this coefficient of variation: lognormal
  // (spec), or normal (truncated at 0.05) to check the Gaussian closed form.
  double jitter_cv = 0;
  JitterKind jitter_kind = JitterKind::kLognormal;
  // Straggler episodes: before each iteration, a worker not in an episode starts one with this probability; for
  // `straggler_iterations` iterations its forward and backward take `straggler_factor` times as long.
  double straggler_probability = 0;
  double straggler_factor = 1;
  int64_t straggler_iterations = 1;
};

// Throws Error (naming the flag) for ranks outside [0, workers) or factors below their minimum.
void check(const Heterogeneity& h, int64_t workers);

// One worker's draws: deterministic for (seed, rank), whatever order the simulation asks in.
class WorkerVariability {
 public:
  WorkerVariability(const Heterogeneity& h, int64_t rank, int64_t workers, uint64_t seed);

  // The factor of this worker's forward and backward at its next iteration (call once per iteration, in order).
  double next_iteration_factor();
  double compute_factor() const { return compute_factor_; }  // also the update's
  double link_factor() const { return link_factor_; }
  double slowdown() const { return slowdown_; }  // --slowdown; 1: none
  // A uniform draw in [0, 1) and an index in [0, n) from this worker's own stream (algorithm choices: GoSGD's coin).
  double uniform();

 private:
  const Heterogeneity& h_;
  std::mt19937_64 random_;
  double compute_factor_ = 1, link_factor_ = 1, slowdown_ = 1;
  int64_t straggling_left_ = 0;
};

}  // namespace distsgd::sim
