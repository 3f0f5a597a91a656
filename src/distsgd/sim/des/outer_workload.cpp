// localsgd, slowmo and diloco in the discrete-event simulator, as algo/outer/outer_loop.cpp runs them: after every
// inner step's update, step k of a round of H/F starts fragment (round mod F)'s exchange at k = H/F - delay and
// merges it at k = H/F (a wait, then the outer update over the fragment). At 32 bits the exchange is one allreduce;
// quantised, an alltoall, then (one step later, or at the merge) an allgather. The fragment is m/F bytes. DiLoCo
// with --compress powersgd exchanges the whole model at the merge step through PowerSGD's sequence
// (des_collective_work.hpp), from its --powersgd-start-th exchange on (the earlier ones are plain allreduces).
// SlowMo over SGP runs SGP's step (des_decentralized_workloads.cpp, without overlap: update, push, wait, merge) as
// every inner step, then the outer loop's exchange (slowmo_over_sgp.cpp).
#include <memory>

#include "distsgd/sim/analytical/outer_model.hpp"
#include "distsgd/sim/des/collective_work.hpp"
#include "distsgd/sim/des/workload.hpp"

namespace distsgd::sim {

OuterLoopSettings outer_loop_settings(const DesSettings& s) {
  // Only diloco takes fragments, a delay, quantised payloads and PowerSGD (as distsgd train).
  if (s.algorithm == "slowmo") return {s.sync_every, 1, 0, 32, 0, s.slowmo_base == "sgp"};
  if (s.algorithm != "diloco") return {s.sync_every};
  return {s.sync_every, s.fragments, s.fragment_delay, s.outer_bits, s.powersgd_rank};
}

namespace {

struct FragmentWork {
  bool started = false;
  CollectiveWork collective;
};

class OuterWorkload final : public Workload {
 public:
  explicit OuterWorkload(DesContext& c)
      : c_(c),
        settings_(outer_loop_settings(c.settings)),
        fragment_bytes_(c.model_bytes() / static_cast<double>(settings_.fragments)),
        message_bytes_(quantized_message_bytes(fragment_bytes_, settings_.bits)),
        states_(static_cast<size_t>(c.workers)) {
    if (settings_.powersgd_rank > 0) powersgd_ = powersgd_step(c.profile, settings_.powersgd_rank);
    if (settings_.sgp_base) sgp_ = make_sgp_gossip_workload(c);
  }

  void before_forward(int64_t worker, int64_t step, Next next) override {
    if (sgp_) return sgp_->before_forward(worker, step, std::move(next));
    next();
  }

  void after_backward(int64_t worker, int64_t step, Next next) override {
    // SGP's step includes the inner update.
    if (sgp_) return sgp_->after_backward(worker, step, [this, worker, next] { outer_step(worker, next); });
    c_.run(worker, "update", c_.update_seconds(worker, c_.model_bytes()),
           [this, worker, next] { outer_step(worker, next); });
  }

 private:
  struct WorkerState {
    int64_t local_step = 0, exchanges = 0;
    FragmentWork first, second;
  };

  void outer_step(int64_t worker, Next next) {
    auto& s = states_[static_cast<size_t>(worker)];
    const int64_t h = settings_.sync_every / settings_.fragments;
    ++s.local_step;
    if (settings_.powersgd_rank > 0 && s.exchanges >= c_.settings.powersgd_start) {
      if (s.local_step < h) return next();
      return powersgd_exchange(c_, worker, powersgd_, s.first.collective,
                               [this, worker, next] { merge(worker, next); });
    }
    const bool quantized = settings_.bits != 32;
    if (s.local_step == h - settings_.delay) {
      if (c_.workers > 1) {
        launch(worker, quantized ? CollectiveKind::kAlltoall : CollectiveKind::kAllreduce, s.first,
               quantized ? "alltoall fragment" : "allreduce fragment");
      }
    } else if (quantized && s.first.started && !s.second.started && s.local_step < h) {
      return start_second_half(worker, [this, worker, next] { after_exchange_step(worker, next); });
    }
    after_exchange_step(worker, std::move(next));
  }

  void after_exchange_step(int64_t worker, Next next) {
    auto& s = states_[static_cast<size_t>(worker)];
    if (s.local_step < settings_.sync_every / settings_.fragments) return next();
    auto merged = [this, worker, next] { merge(worker, next); };
    if (c_.workers == 1) return merged();
    if (settings_.bits == 32) return wait_for(c_, worker, s.first.collective, merged);
    if (!s.second.started) {
      return start_second_half(worker, [this, worker, merged] {
        wait_for(c_, worker, states_[static_cast<size_t>(worker)].second.collective, merged);
      });
    }
    wait_for(c_, worker, s.second.collective, merged);
  }

  // The exchange is complete: the outer update over the fragment, and the next round.
  void merge(int64_t worker, Next next) {
    auto& state = states_[static_cast<size_t>(worker)];
    state.local_step = 0;
    ++state.exchanges;
    state.first = FragmentWork{};
    state.second = FragmentWork{};
    c_.run(worker, "outer update", c_.update_seconds(worker, fragment_bytes_), next);
  }

  // The quantised exchange's reduce: wait for the alltoall, sum the slices (the cluster's gamma), start the allgather.
  void start_second_half(int64_t worker, Next next) {
    auto& s = states_[static_cast<size_t>(worker)];
    wait_for(c_, worker, s.first.collective, [this, worker, next] {
      const double p = static_cast<double>(c_.workers);
      c_.run(worker, "reduce fragment", c_.cluster.gamma_seconds_per_byte * fragment_bytes_ * (p - 1) / p,
             [this, worker, next] {
               launch(worker, CollectiveKind::kAllgather, states_[static_cast<size_t>(worker)].second,
                      "allgather fragment");
               next();
             });
    });
  }

  void launch(int64_t worker, CollectiveKind kind, FragmentWork& work, const char* name) {
    work.started = true;
    launch_collective(c_, worker, kind, message_bytes_, name, work.collective);
  }

  DesContext& c_;
  OuterLoopSettings settings_;
  double fragment_bytes_, message_bytes_;
  PowerSgdStep powersgd_;          // diloco --compress powersgd
  std::unique_ptr<Workload> sgp_;  // slowmo --base sgp: every inner step is SGP's
  std::vector<WorkerState> states_;
};

}  // namespace

std::unique_ptr<Workload> make_outer_workload(DesContext& context) { return std::make_unique<OuterWorkload>(context); }

}  // namespace distsgd::sim
