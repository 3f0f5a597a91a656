#include "distsgd/algo/outer/outer_loop.hpp"

#include "distsgd/algo/outer/quantized_allreduce.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"

#include <ATen/ATen.h>

namespace distsgd::algo::outer {

// One fragment's exchange, from prepare() to merge().
struct OuterLoop::Exchange {
  int64_t fragment = 0;
  at::Tensor payload;  // the sum over the workers once complete
  comm::Work work;     // 32 bits
  std::unique_ptr<QuantizedAllreduce> quantized;
  bool complete = false;
  bool is_mean = false;  // the payload already holds the mean (mean_of_workers), not the sum

  void finish() {
    if (complete) return;
    if (quantized) {
      quantized->finish();
    } else {
      work.wait();
    }
    complete = true;
  }
};

std::vector<Fragment> fragments_of(const std::vector<Fragment>& parameters, int64_t count) {
  const auto n = static_cast<int64_t>(parameters.size());
  require(count <= n, "--fragments " + std::to_string(count) + ": the model has only " + std::to_string(n) +
                          " parameter tensors, and a fragment holds whole ones");
  int64_t total = 0;
  for (const auto& p : parameters) total += p.numel;
  std::vector<Fragment> fragments;
  int64_t next = 0, covered = 0;
  for (int64_t f = 0; f < count; ++f) {
    Fragment fragment{parameters[static_cast<size_t>(next)].offset, 0};
    const int64_t target = total * (f + 1) / count;
    // At least one parameter each, and leave one for every fragment still to come.
    do {
      fragment.numel += parameters[static_cast<size_t>(next)].numel;
      covered += parameters[static_cast<size_t>(next)].numel;
      ++next;
    } while (next < n - (count - f - 1) && covered + parameters[static_cast<size_t>(next)].numel / 2 <= target);
    if (f == count - 1) {
      for (; next < n; ++next) fragment.numel += parameters[static_cast<size_t>(next)].numel;
    }
    fragments.push_back(fragment);
  }
  return fragments;
}

OuterLoop::OuterLoop(comm::Communicator* comm, at::Tensor params, OuterSettings settings)
    : comm_(comm),
      params_(std::move(params)),
      global_(params_.clone()),
      settings_(std::move(settings)),
      workers_(comm ? comm->worker_count() : 1),
      outer_(params_.numel(), settings_.momentum, 0, settings_.rule == OuterRule::kNesterov) {
  if (settings_.fragments.empty()) settings_.fragments = {{0, params_.numel()}};
  const auto count = static_cast<int64_t>(settings_.fragments.size());
  require(settings_.sync_every % count == 0, "--sync-every " + std::to_string(settings_.sync_every) +
                                                 " is not a multiple of --fragments " + std::to_string(count));
  require(!settings_.mean_of_workers || (count == 1 && settings_.bits == 32 && settings_.delay == 0),
          "a compressed exchange of the pseudo-gradient takes the whole model at 32 bits without a delay");
  require(settings_.delay < steps_per_fragment(),
          "--fragment-delay " + std::to_string(settings_.delay) + " must be below --sync-every / --fragments (" +
              std::to_string(steps_per_fragment()) + "): a fragment's exchange must end before its next one");
}

OuterLoop::~OuterLoop() = default;

int64_t OuterLoop::steps_per_fragment() const {
  return settings_.sync_every / static_cast<int64_t>(settings_.fragments.size());
}

void OuterLoop::after_inner_step(double inner_lr) {
  ++local_step_;
  const int64_t h = steps_per_fragment();
  if (local_step_ == h - settings_.delay) {
    prepare(round_ % static_cast<int64_t>(settings_.fragments.size()));
  } else if (in_flight_ && in_flight_->quantized && !in_flight_->quantized->reduced() && local_step_ < h) {
    // A quantised exchange's second half starts one step after its first, so both overlap inner steps.
    in_flight_->quantized->reduce();
  }
  if (local_step_ < h) return;
  merge(inner_lr);
  local_step_ = 0;
  ++round_;
}

void OuterLoop::complete_in_flight(double inner_lr) {
  if (in_flight_) merge(inner_lr);
}

void OuterLoop::prepare(int64_t fragment) {
  const Fragment& f = settings_.fragments[static_cast<size_t>(fragment)];
  auto exchange = std::make_unique<Exchange>();
  exchange->fragment = fragment;
  const auto local = params_.narrow(0, f.offset, f.numel);
  // Local SGD averages the parameters themselves; the others the pseudo-gradient x_prev - x_i.
  exchange->payload =
      settings_.rule == OuterRule::kAverage ? local.clone() : global_.narrow(0, f.offset, f.numel) - local;
  if (settings_.mean_of_workers) {
    waiting_.start();
    bytes_sent_ += settings_.mean_of_workers(exchange->payload, exchanges_);
    waiting_.stop();
    exchange->complete = exchange->is_mean = true;
  } else if (workers_ == 1) {
    exchange->complete = true;
  } else if (settings_.bits == 32) {
    exchange->work = comm_->allreduce_sum(exchange->payload);
    bytes_sent_ += 2 * (workers_ - 1) * f.numel * 4 / workers_;  // a ring allreduce's two halves
  } else {
    exchange->quantized = std::make_unique<QuantizedAllreduce>(*comm_, exchange->payload, settings_.bits);
    exchange->quantized->start();
  }
  in_flight_ = std::move(exchange);
}

void OuterLoop::merge(double inner_lr) {
  auto exchange = std::move(in_flight_);
  waiting_.start();
  exchange->finish();
  waiting_.stop();
  if (exchange->quantized) bytes_sent_ += exchange->quantized->bytes_sent();
  ++exchanges_;
  updating_.start();
  const Fragment& f = settings_.fragments[static_cast<size_t>(exchange->fragment)];
  auto global = global_.narrow(0, f.offset, f.numel);
  auto local = params_.narrow(0, f.offset, f.numel);
  const auto w = exchange->is_mean ? 1.0 : static_cast<double>(workers_);
  switch (settings_.rule) {
    case OuterRule::kAverage:
      global.copy_(exchange->payload.div_(w));
      break;
    case OuterRule::kNesterov:
      outer_.step(global, exchange->payload, settings_.lr, f.offset, {w});
      break;
    case OuterRule::kSlowMo:
      require(inner_lr > 0, "slowmo: the inner learning rate is 0 (the slow momentum divides by it)");
      outer_.step(global, exchange->payload, settings_.lr * inner_lr, f.offset, {w * inner_lr});
      break;
  }
  // torchft's merge: x = lerp(x_global, x_local, alpha).
  if (settings_.alpha > 0) {
    const auto kept = local.clone();
    local.copy_(global).lerp_(kept, settings_.alpha);
  } else {
    local.copy_(global);
  }
  updating_.stop();
}

void OuterLoop::save_state(AlgorithmState& state) {
  state.put("outer_global", global_);
  state.put("outer_momentum", outer_.momentum_buffer());
  state.put_integer("outer_local_step", local_step_);
  state.put_integer("outer_round", round_);
  state.put_integer("outer_exchanges", exchanges_);
  state.put_integer("outer_in_flight", in_flight_ ? in_flight_->fragment : -1);
  if (in_flight_) {
    waiting_.start();
    in_flight_->finish();
    waiting_.stop();
    state.put("outer_in_flight_sum", in_flight_->payload);
  }
}

void OuterLoop::load_state(const AlgorithmState& state) {
  if (!state.has("outer_global")) return;  // a checkpoint of the very start
  state.copy_to("outer_global", global_);
  state.copy_to("outer_momentum", outer_.momentum_buffer());
  local_step_ = state.integer("outer_local_step");
  round_ = state.integer("outer_round");
  exchanges_ = state.integer("outer_exchanges");
  const int64_t fragment = state.integer("outer_in_flight");
  in_flight_.reset();
  if (fragment >= 0) {
    auto exchange = std::make_unique<Exchange>();
    exchange->fragment = fragment;
    exchange->payload = state.tensor("outer_in_flight_sum").clone();
    exchange->complete = true;
    in_flight_ = std::move(exchange);
  }
}

}  // namespace distsgd::algo::outer
