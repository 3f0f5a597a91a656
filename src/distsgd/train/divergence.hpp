// Divergence: a worker whose training loss is NaN, infinite, or above --divergence-factor (100) times max(its first
// step's loss, 1) ends the run with stop_reason "diverged". The rule, the record of where it happened, and how the
// other processes learn of it without hanging: the worker that sees it writes its record to the rendezvous store;
// workers that meet in collectives learn of it at their next stop agreement (worker_loop.cpp), independent workers
// by polling the store; after the last collective worker 0 reads the earliest record into summary.json.
#pragma once
#include "distsgd/core/timer.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace distsgd::train {

struct Process;

struct Divergence {
  int64_t worker = 0;
  int64_t step = 0;  // 0-based global step whose loss ran away
  double loss = 0;
  double limit = 0;       // losses above it count as diverged (infinite: only NaN and infinite ones do)
  double first_loss = 0;  // the worker's first loss in this run, which set the limit
};

// factor * max(first_loss, 1); infinite when factor is 0 or the first loss is not finite.
double divergence_limit(double first_loss, double factor);
// NaN, infinite, or above the limit.
bool loss_diverged(double loss, double limit);

// The record as summary.json's "divergence" holds it (losses as text when not finite, e.g. "nan").
nlohmann::json divergence_json(const Divergence& d);
Divergence divergence_from_json(const nlohmann::json& j);

// One line: "training diverged: asp, worker 2, step 57: loss 3.1e+13 above 230 (100 x the first loss 2.3); ...",
// ending with the hint at the README's recipe.
std::string divergence_message(const std::string& algorithm, const Divergence& d);

// One worker's view: its own losses, and in a distributed run the records of the others in the store.
class DivergenceWatch {
 public:
  DivergenceWatch(Process& p, double factor) : p_(p), factor_(factor) {}

  // After every step: the first loss sets the limit; the first loss that runs away is recorded (here, and for the
  // others in the store).
  void observe(int64_t step, double loss);
  bool here() const { return own_.has_value(); }
  // This worker diverged, or (polled from the store at most every few tenths of a second) another one did.
  bool here_or_polled();
  // The earliest record of any worker (by step, then worker), once every worker has stopped training.
  std::optional<Divergence> first_of_all();

 private:
  Process& p_;
  double factor_;
  double limit_ = -1;  // set by the first observed loss
  double first_loss_ = 0;
  std::optional<Divergence> own_;
  bool seen_elsewhere_ = false;
  Clock::time_point last_poll_ = Clock::now();
};

}  // namespace distsgd::train
