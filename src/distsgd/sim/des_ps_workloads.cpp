// The parameter-server algorithms in the discrete-event simulator, each as its
// real worker and server sides run (algo/bsp.cpp, asp.cpp, ssp.cpp, easgd.cpp,
// aladdin.cpp; spec/simulator.md, "Per-algorithm models"). Every server update
// runs under its shard's lock, one at a time (the server's FIFO compute),
// costing the profile's update per byte of the shard; aggregation costs gamma
// per byte (the cluster's reduction cost). Span names are the real ones: "push,
// wait for reply", "push", "compress", "update" on workers; "update", "hold
// pull", "elastic update", "accumulate" on servers.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "distsgd/core/error.hpp"
#include "distsgd/sim/des_dgc.hpp"
#include "distsgd/sim/des_parameter_server.hpp"
#include "distsgd/sim/des_workload.hpp"

namespace distsgd::sim {
namespace {

class PsWorkload : public Workload {
 protected:
  explicit PsWorkload(DesContext& c) : c_(c), client_(c), dense_(client_.shards()) {
    // A compressed gradient: each shard gets the entries of its range (shares
    // of the message by shard size).
    const double sparse = dgc_message_bytes(c.profile, c.settings.density);
    for (const double shard : client_.shards())
      gradient_.push_back(c.settings.density > 0 ? sparse * shard / c.model_bytes() : shard);
  }

  bool compressing() const { return c_.settings.density > 0; }
  // PsWorker::compress_gradient ("compress": a pass over the gradient, charged
  // as an update), then `next`.
  void compress_then(int64_t worker, Next next) {
    if (!compressing()) return next();
    c_.run(worker, "compress", c_.update_seconds(worker, c_.model_bytes()), std::move(next));
  }
  double shard(int64_t s) const { return client_.shards()[static_cast<size_t>(s)]; }
  void record_staleness(int64_t worker, int64_t value) {
    if (c_.measuring(worker)) ++c_.staleness[value];
  }

  DesContext& c_;
  ShardedClient client_;
  std::vector<double> dense_;     // bytes per shard: parameters, or a dense gradient
  std::vector<double> gradient_;  // bytes per shard of the gradient as sent (DGC: compressed)
  std::vector<int64_t> versions_ = std::vector<int64_t>(static_cast<size_t>(c_.servers), 0);
};

// BSP: push to every shard and wait; a shard waits for all P gradients, sums
// them (P (m/S) gamma), updates (m/S at the update cost) and answers every
// worker at once.
class Bsp final : public PsWorkload {
 public:
  explicit Bsp(DesContext& c) : PsWorkload(c), arrived_(static_cast<size_t>(c.servers), 0) {}

  void after_backward(int64_t worker, int64_t, Next next) override {
    compress_then(worker, [this, worker, next] {
      const double start = c_.queue.now();
      client_.expect_replies(worker, [this, worker, start, next] {
        c_.span(worker, "push, wait for reply", start);
        next();
      });
      client_.send_to_all(worker, gradient_, [this](int64_t s) { arrived(s); });
    });
  }

 private:
  void arrived(int64_t s) {
    if (++arrived_[static_cast<size_t>(s)] < c_.workers) return;
    arrived_[static_cast<size_t>(s)] = 0;
    const double aggregate = static_cast<double>(c_.workers) * shard(s) * c_.cluster.gamma_seconds_per_byte;
    c_.run_on_server(s, "update", aggregate + c_.server_update_seconds(shard(s)), [this, s] {
      const int64_t version = ++versions_[static_cast<size_t>(s)];
      for (int64_t w = 0; w < c_.workers; ++w) client_.reply(s, w, version);
    });
  }

  std::vector<int64_t> arrived_;  // per shard, this round
};

// ASP: push and wait for the reply; each shard applies every gradient at once,
// alone, and replies to its sender.
class Asp final : public PsWorkload {
 public:
  explicit Asp(DesContext& c) : PsWorkload(c) {}

  void after_backward(int64_t worker, int64_t, Next next) override {
    compress_then(worker, [this, worker, next] {
      const double start = c_.queue.now();
      const int64_t version = client_.version(worker);
      client_.expect_replies(worker, [this, worker, start, next] {
        c_.span(worker, "push, wait for reply", start);
        next();
      });
      client_.send_to_all(worker, gradient_, [this, worker, version](int64_t s) {
        c_.run_on_server(s, "update", c_.server_update_seconds(shard(s)), [this, worker, version, s] {
          record_staleness(worker, versions_[static_cast<size_t>(s)] - version);
          client_.reply(s, worker, ++versions_[static_cast<size_t>(s)]);
        });
      });
    });
  }
};

// SSP: push every iteration (applied at once, as ASP; the worker waits until it
// is sent), the same step locally, and every s + 1 iterations a blocking pull,
// which a shard holds until the slowest worker's clock is at least the puller's
// minus s. Records the clock gap at each release (never above s).
class Ssp final : public PsWorkload {
 public:
  explicit Ssp(DesContext& c)
      : PsWorkload(c),
        clock_(static_cast<size_t>(c.workers), 0),
        shard_clocks_(static_cast<size_t>(c.servers), Clocks(c.workers, c.settings.warmup + c.settings.iterations)),
        held_(static_cast<size_t>(c.servers)) {}

  void after_backward(int64_t worker, int64_t, Next next) override {
    compress_then(worker, [this, worker, next] {
      const double start = c_.queue.now();
      const int64_t version = client_.version(worker);
      const int64_t clock = clock_[static_cast<size_t>(worker)];
      client_.send_to_all(
          worker, gradient_, [this, worker, version, clock](int64_t s) { apply(s, worker, version, clock); },
          [this, worker, start, next] {
            c_.span(worker, "push", start);
            c_.run(worker, "update", c_.update_seconds(worker, c_.model_bytes()), [this, worker, next] {
              const int64_t clock = ++clock_[static_cast<size_t>(worker)];
              if (clock % (c_.settings.staleness + 1) != 0) return next();
              pull(worker, clock, next);
            });
          });
    });
  }

  void worker_finished(int64_t worker) override {
    // SspWorker::end_training: kRetire, so that the worker never holds the
    // others' pulls.
    client_.send_to_all(worker, std::vector<double>(static_cast<size_t>(c_.servers), 0.0), [this, worker](int64_t s) {
      c_.run_on_server(s, nullptr, 0, [this, worker, s] {
        shard_clocks_[static_cast<size_t>(s)].set(worker, Clocks::kRetired);
        release_held(s);
      });
    });
  }

 private:
  // Each shard's clocks of every worker; the minimum only grows, so a count per
  // clock value finds it quickly.
  class Clocks {
   public:
    static constexpr int64_t kRetired = std::numeric_limits<int64_t>::max();
    Clocks(int64_t workers, int64_t iterations)
        : of_(static_cast<size_t>(workers), 0), count_(static_cast<size_t>(iterations + 2), 0) {
      count_[0] = workers;
    }
    void set(int64_t worker, int64_t clock) {
      --count_[index(of_[static_cast<size_t>(worker)])];
      of_[static_cast<size_t>(worker)] = clock;
      ++count_[index(clock)];
      while (min_ + 1 < static_cast<int64_t>(count_.size()) && count_[static_cast<size_t>(min_)] == 0) ++min_;
    }
    // kRetired when every worker is.
    int64_t min() const { return min_ + 1 == static_cast<int64_t>(count_.size()) ? kRetired : min_; }

   private:
    size_t index(int64_t clock) const {
      return clock == kRetired ? count_.size() - 1 : static_cast<size_t>(std::min<int64_t>(clock, count_.size() - 2));
    }
    std::vector<int64_t> of_;
    std::vector<int64_t> count_;  // workers at each clock; the last entry: retired
    int64_t min_ = 0;
  };
  struct HeldPull {
    int64_t worker, clock;
    double since;
  };

  void apply(int64_t s, int64_t worker, int64_t version, int64_t clock) {
    c_.run_on_server(s, "update", c_.server_update_seconds(shard(s)), [this, s, worker, version, clock] {
      record_staleness(worker, versions_[static_cast<size_t>(s)] - version);
      ++versions_[static_cast<size_t>(s)];
      shard_clocks_[static_cast<size_t>(s)].set(worker, clock + 1);
      release_held(s);
    });
  }

  void pull(int64_t worker, int64_t clock, Next next) {
    const double start = c_.queue.now();
    client_.expect_replies(worker, [this, worker, start, next] {
      c_.span(worker, "push, wait for reply", start);
      next();
    });
    client_.send_to_all(worker, std::vector<double>(static_cast<size_t>(c_.servers), 0.0),
                        [this, worker, clock](int64_t s) {
                          held_[static_cast<size_t>(s)].push_back({worker, clock, c_.queue.now()});
                          release_held(s);
                        });
  }

  // SspServer::serve_pull: a pull from clock c is answered once min_clock >= c
  // - s.
  void release_held(int64_t s) {
    auto& held = held_[static_cast<size_t>(s)];
    const int64_t slowest = shard_clocks_[static_cast<size_t>(s)].min();
    for (size_t i = 0; i < held.size();) {
      const HeldPull pull = held[i];
      if (slowest < pull.clock - c_.settings.staleness) {
        ++i;
        continue;
      }
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
      if (slowest != Clocks::kRetired && c_.measuring(pull.worker)) ++c_.clock_gap[pull.clock - slowest];
      c_.trace.span(c_.server_rank(s), "hold pull", pull.since, c_.queue.now());
      client_.reply(s, pull.worker, versions_[static_cast<size_t>(s)]);
    }
  }

  std::vector<int64_t> clock_;  // per worker: iterations pushed
  std::vector<Clocks> shard_clocks_;
  std::vector<std::vector<HeldPull>> held_;  // per shard
};

// EASGD: a local step every iteration; every tau iterations a round trip of the
// parameters with every shard, which applies the elastic update under its lock.
class Easgd final : public PsWorkload {
 public:
  explicit Easgd(DesContext& c) : PsWorkload(c), clock_(static_cast<size_t>(c.workers), 0) {}

  void after_backward(int64_t worker, int64_t, Next next) override {
    c_.run(worker, "update", c_.update_seconds(worker, c_.model_bytes()), [this, worker, next] {
      if (++clock_[static_cast<size_t>(worker)] % c_.settings.tau != 0) return next();
      const double start = c_.queue.now();
      client_.expect_replies(worker, [this, worker, start, next] {
        c_.span(worker, "push, wait for reply", start);
        next();
      });
      client_.send_to_all(worker, dense_, [this, worker](int64_t s) {
        c_.run_on_server(s, "elastic update", c_.server_update_seconds(shard(s)),
                         [this, worker, s] { client_.reply(s, worker, ++versions_[static_cast<size_t>(s)]); });
      });
    });
  }

 private:
  std::vector<int64_t> clock_;
};

// ALADDIN: the worker waits only for its previous gradient to have left, steps
// locally, sends the gradient without waiting, and mixes in every server model
// that has arrived. A shard accumulates each gradient (gamma per byte); when
// worker i's count reaches pi it updates (lazily: the averaged gradient) and
// pushes its model to i alone. Variants: l1 never pushes; l2 updates with every
// gradient.
class Aladdin final : public PsWorkload {
 public:
  explicit Aladdin(DesContext& c)
      : PsWorkload(c),
        sending_(static_cast<size_t>(c.workers), 0),
        send_waiter_(static_cast<size_t>(c.workers)),
        arrived_(static_cast<size_t>(c.workers), 0),
        since_push_(static_cast<size_t>(c.servers), std::vector<int64_t>(static_cast<size_t>(c.workers), 0)) {
    const auto& v = c.settings.aladdin_variant;
    require(v == "full" || v == "l1" || v == "l2", "--aladdin-variant must be full, l1 or l2 (got '" + v + "')");
  }

  void after_backward(int64_t worker, int64_t, Next next) override {
    wait_for_sends(worker, [this, worker, next] {
      c_.run(worker, "update", c_.update_seconds(worker, c_.model_bytes()), [this, worker, next] {
        const int64_t version = version_[static_cast<size_t>(worker)];
        sending_[static_cast<size_t>(worker)] = 1;
        client_.send_to_all(
            worker, dense_, [this, worker, version](int64_t s) { accumulate(s, worker, version); },
            [this, worker] {
              sending_[static_cast<size_t>(worker)] = 0;
              if (Next waiter = std::move(send_waiter_[static_cast<size_t>(worker)])) {
                send_waiter_[static_cast<size_t>(worker)] = nullptr;
                waiter();
              }
            });
        mix(worker, next);
      });
    });
  }

 private:
  void wait_for_sends(int64_t worker, Next next) {
    if (!sending_[static_cast<size_t>(worker)]) return next();
    send_waiter_[static_cast<size_t>(worker)] = std::move(next);  // no span: the real code times it, traces nothing
  }

  // x_i <- (1 - alpha) x_i + alpha x~ for each arrived shard model: a pass over
  // the slice (no span, as the real code's mix_arrived_models).
  void mix(int64_t worker, Next next) {
    const double bytes =
        static_cast<double>(arrived_[static_cast<size_t>(worker)]) * c_.model_bytes() / static_cast<double>(c_.servers);
    arrived_[static_cast<size_t>(worker)] = 0;
    if (bytes == 0) return next();
    c_.run(worker, nullptr, c_.update_seconds(worker, bytes), std::move(next));
  }

  void accumulate(int64_t s, int64_t worker, int64_t version) {
    const auto& variant = c_.settings.aladdin_variant;
    int64_t& since = since_push_[static_cast<size_t>(s)][static_cast<size_t>(worker)];
    const bool triggered = ++since >= c_.settings.pi;
    if (triggered) since = 0;
    const bool updates = variant == "l2" || triggered;
    const double seconds = (variant == "l2" ? 0.0 : shard(s) * c_.cluster.gamma_seconds_per_byte) +
                           (updates ? c_.server_update_seconds(shard(s)) : 0.0);
    c_.run_on_server(s, "accumulate", seconds, [this, s, worker, version, updates, triggered, variant] {
      record_staleness(worker, versions_[static_cast<size_t>(s)] - version);
      if (updates) ++versions_[static_cast<size_t>(s)];
      if (!triggered || variant == "l1") return;
      const int64_t pushed = versions_[static_cast<size_t>(s)];
      c_.send_to_worker(s, worker, shard(s), [this, s, worker, pushed] {
        ++arrived_[static_cast<size_t>(worker)];
        if (s == 0) version_[static_cast<size_t>(worker)] = pushed;  // AladdinWorker::mix_arrived_models
      });
    });
  }

  std::vector<char> sending_;                     // per worker: its gradient is still on the way
  std::vector<Next> send_waiter_;                 // per worker
  std::vector<int64_t> arrived_;                  // per worker: shard models arrived since its last mix
  std::vector<std::vector<int64_t>> since_push_;  // per shard, per worker: gradients since its last push
  std::vector<int64_t> version_ = std::vector<int64_t>(static_cast<size_t>(c_.workers), 0);  // per worker
};

}  // namespace

std::unique_ptr<Workload> make_parameter_server_workload(DesContext& c) {
  const auto& a = c.settings.algorithm;
  if (a == "bsp") return std::make_unique<Bsp>(c);
  if (a == "asp") return std::make_unique<Asp>(c);
  if (a == "ssp") return std::make_unique<Ssp>(c);
  if (a == "easgd") return std::make_unique<Easgd>(c);
  if (a == "aladdin") return std::make_unique<Aladdin>(c);
  throw Error("simulator: '" + a + "' is not a parameter-server algorithm");
}

}  // namespace distsgd::sim
