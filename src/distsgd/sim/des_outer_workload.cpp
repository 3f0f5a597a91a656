// localsgd, slowmo and diloco in the discrete-event simulator, as algo/outer/outer_loop.cpp runs them: after every
// inner step's update, step k of a round of H/F starts fragment (round mod F)'s exchange at k = H/F - delay and
// merges it at k = H/F (a wait, then the outer update over the fragment). At 32 bits the exchange is one allreduce;
// quantised, an alltoall, then (one step later, or at the merge) an allgather. The fragment is m/F bytes.
#include <memory>

#include "distsgd/sim/des_workload.hpp"
#include "distsgd/sim/outer_model.hpp"

namespace distsgd::sim {
namespace {

struct FragmentWork {
  bool started = false, done = true;
  Next waiter;
};

class OuterWorkload final : public Workload {
 public:
  explicit OuterWorkload(DesContext& c)
      : c_(c),
        settings_{c.settings.sync_every, c.settings.fragments, c.settings.fragment_delay, c.settings.outer_bits},
        fragment_bytes_(c.model_bytes() / static_cast<double>(settings_.fragments)),
        message_bytes_(quantized_message_bytes(fragment_bytes_, settings_.bits)),
        states_(static_cast<size_t>(c.workers)) {}

  void after_backward(int64_t worker, int64_t, Next next) override {
    c_.run(worker, "update", c_.update_seconds(worker, c_.model_bytes()),
           [this, worker, next] { outer_step(worker, next); });
  }

 private:
  struct WorkerState {
    int64_t local_step = 0;
    FragmentWork first, second;
  };

  void outer_step(int64_t worker, Next next) {
    auto& s = states_[static_cast<size_t>(worker)];
    const int64_t h = settings_.sync_every / settings_.fragments;
    ++s.local_step;
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
    auto merge = [this, worker, next] {
      auto& state = states_[static_cast<size_t>(worker)];
      state.local_step = 0;
      state.first = FragmentWork{};
      state.second = FragmentWork{};
      c_.run(worker, "outer update", c_.update_seconds(worker, fragment_bytes_), next);
    };
    if (c_.workers == 1) return merge();
    if (settings_.bits == 32) return wait(worker, s.first, merge);
    if (!s.second.started) {
      return start_second_half(
          worker, [this, worker, merge] { wait(worker, states_[static_cast<size_t>(worker)].second, merge); });
    }
    wait(worker, s.second, merge);
  }

  // The quantised exchange's reduce: wait for the alltoall, sum the slices (the cluster's gamma), start the allgather.
  void start_second_half(int64_t worker, Next next) {
    auto& s = states_[static_cast<size_t>(worker)];
    wait(worker, s.first, [this, worker, next] {
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
    work.done = false;
    work.waiter = nullptr;
    c_.bytes_sent[static_cast<size_t>(worker)] += collective_bytes_sent(kind, c_.workers, message_bytes_);
    const double start = c_.queue.now();
    c_.collectives.launch(worker, kind, message_bytes_, [this, worker, name, start, &work] {
      if (c_.trace.enabled()) c_.span(worker, name, start, Timeline::kCommunication);
      work.done = true;
      if (work.waiter) {
        Next waiter = std::move(work.waiter);
        work.waiter = nullptr;
        waiter();
      }
    });
  }

  void wait(int64_t worker, FragmentWork& work, Next next) {
    if (work.done) return next();
    const double start = c_.queue.now();
    work.waiter = [this, worker, start, next = std::move(next)] {
      c_.span(worker, "wait", start);
      next();
    };
  }

  DesContext& c_;
  OuterLoopSettings settings_;
  double fragment_bytes_, message_bytes_;
  std::vector<WorkerState> states_;
};

}  // namespace

std::unique_ptr<Workload> make_outer_workload(DesContext& context) { return std::make_unique<OuterWorkload>(context); }

}  // namespace distsgd::sim
