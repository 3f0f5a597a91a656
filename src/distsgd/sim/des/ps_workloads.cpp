// The parameter-server algorithms in the discrete-event simulator, each as its real worker and server sides run
// (algo/bsp.cpp, asp.cpp, ssp.cpp, easgd.cpp, aladdin.cpp; spec/simulator.md, "Per-algorithm models"), over the
// substrate of des_parameter_server.hpp. Every server update runs under its shard's lock, one at a time (the server's
// FIFO compute), costing the profile's update per byte of what it updates; aggregation costs gamma per byte (the
// cluster's reduction cost). Span names are the real ones: "push, wait for reply", "push", "wait for a send buffer",
// "compress", "update" on workers; "update", "hold pull", "elastic update", "accumulate" on servers; "push to shard S
// [offset, +numel)" on the workers' communication lane.
#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "distsgd/core/error.hpp"
#include "distsgd/sim/des/dgc.hpp"
#include "distsgd/sim/des/parameter_server.hpp"
#include "distsgd/sim/des/workload.hpp"

namespace distsgd::sim {
namespace {

// What the five share: the shards, the dense uplink (BSP, ASP, SSP, ALADDIN), whole-shard requests, versions.
class PsWorkload : public Workload {
 protected:
  // `replies`: answered pushes; `wfbp_allowed`: the algorithm pushes pieces during backward under --overlap wfbp.
  PsWorkload(DesContext& c, bool replies, bool wfbp_allowed)
      : c_(c),
        shards_(shard_ranges(c.profile, c.servers, c.settings.sharding)),
        requests_(c, shards_),
        buckets_(make_bucket_layout(c.profile, c.settings.first_bucket_bytes, c.settings.bucket_bytes)),
        // DGC pushes the whole gradient after backward (as distsgd train).
        wfbp_(wfbp_allowed && c.settings.overlap == "wfbp" && c.settings.density == 0),
        uplink_(c, cut_at_shards(c.profile, shards_, wfbp_ ? &buckets_ : nullptr), replies,
                [this](int64_t worker, const Piece& piece, int64_t version, int64_t step) {
                  at_server(worker, piece, version, step);
                }),
        versions_(static_cast<size_t>(c.servers), 0) {
    // A compressed gradient: each shard gets the entries of its range (shares of the message by shard size).
    const double sparse = dgc_message_bytes(c.profile, c.settings.density);
    for (const double shard : requests_.shard_bytes()) sparse_.push_back(sparse * shard / c.model_bytes());
  }

  const BucketLayout* watched_buckets() const override { return wfbp_ ? &buckets_ : nullptr; }
  void bucket_ready(int64_t worker, int64_t, size_t bucket) override { uplink_.push_bucket(worker, bucket); }

  // A piece of a dense gradient reached its shard.
  virtual void at_server(int64_t worker, const Piece& piece, int64_t version, int64_t step) {}

  bool compressing() const { return c_.settings.density > 0; }
  // BSP, ASP, SSP: a dense gradient's pieces go out through the uplink as backward produces them; a compressed one
  // goes out whole after backward (after_backward).
  void start_dense_pushes(int64_t worker, Next next) {
    if (compressing()) return next();
    uplink_.start(worker, std::move(next));
  }
  // BSP, ASP: after backward, the pieces not pushed yet, then every reply.
  void push_rest_and_wait(int64_t worker, Next next) {
    uplink_.push_rest(worker);
    uplink_.finish(worker, std::move(next));
  }
  // PsWorker::compress_gradient ("compress": a pass over the gradient, charged as an update), then `next`.
  void compress(int64_t worker, Next next) {
    c_.run(worker, "compress", c_.update_seconds(worker, c_.model_bytes()), std::move(next));
  }
  double shard_bytes(int64_t s) const { return requests_.shard_bytes()[static_cast<size_t>(s)]; }
  int64_t& version_of(int64_t s) { return versions_[static_cast<size_t>(s)]; }
  void record_staleness(int64_t worker, int64_t value) {
    if (c_.measuring(worker)) ++c_.staleness[value];
  }
  // PsWorker::push_and_receive: requests to every shard, "push, wait for reply" until every reply is back.
  void push_and_receive(int64_t worker, const std::vector<double>& bytes, std::function<void(int64_t)> at_server,
                        Next next) {
    const double start = c_.queue.now();
    requests_.expect_replies(worker, [this, worker, start, next = std::move(next)] {
      c_.span(worker, "push, wait for reply", start);
      next();
    });
    requests_.send_to_all(worker, bytes, std::move(at_server));
  }

  DesContext& c_;
  ShardRanges shards_;
  ShardRequests requests_;
  BucketLayout buckets_;
  bool wfbp_;
  GradientUplink uplink_;
  std::vector<double> sparse_;     // bytes per shard of a compressed gradient
  std::vector<int64_t> versions_;  // per shard: updates applied
};

// BSP: each shard waits for every worker's copy of a piece (or of its whole slice), sums them (P bytes gamma), updates
// (bytes at the update cost) and answers every worker; rounds follow the pieces' order. With local aggregation
// (bsp.cpp's host groups: a node's workers, its lowest rank leading) the members send their gradients to the leader
// and wait for the parameters; the leader waits for them ("wait for the host's gradients"), sums them (gamma per
// byte), pushes the sum as one worker would, and sends the parameters to each member ("send parameters to the
// host"); a shard's round ends when every leader has pushed. With wait-free backprop too, the members send each
// bucket to the leader as backward produces it, and the leader's aggregating thread sums each bucket once its own and
// every member's are in ("sum the host's bucket") and pushes its pieces, bucket after bucket, while backward goes on.
class Bsp final : public PsWorkload {
 public:
  explicit Bsp(DesContext& c)
      : PsWorkload(c, /*replies=*/true, /*wfbp_allowed=*/true),
        rounds_(static_cast<size_t>(c.servers)),
        hosts_(static_cast<size_t>(c.workers)) {
    for (const auto& bucket : uplink_.pieces()) {
      for (const auto& piece : bucket) rounds_[static_cast<size_t>(piece.shard)].pieces.push_back(&piece);
    }
    for (auto& r : rounds_) r.arrived.assign(r.pieces.size(), 0);
    const int64_t per_node = c.settings.local_aggregation == "host" ? c.cluster.workers_per_node : 1;
    for (int64_t w = 0; w < c.workers; w += per_node) pushers_.push_back(w);
  }

  void before_backward(int64_t worker, int64_t, Next next) override {
    if (leader_of(worker) != worker) return next();  // a member pushes to its leader only
    host(worker).summed = host(worker).backward_done = 0;
    start_dense_pushes(worker, std::move(next));
  }

  void bucket_ready(int64_t worker, int64_t, size_t bucket) override {
    const int64_t leader = leader_of(worker);
    if (leader != worker) {
      c_.send_between_workers(worker, leader, buckets_.bytes[bucket], [this, leader, bucket] {
        ++host(leader).bucket_arrivals[bucket];
        sum_next_bucket(leader);
      });
      return;
    }
    if (members_of(worker) == 0) return uplink_.push_bucket(worker, bucket);
    host(worker).backward_done = bucket + 1;
    sum_next_bucket(worker);
  }

  void after_backward(int64_t worker, int64_t, Next next) override {
    if (leader_of(worker) != worker) return exchange_with_leader(worker, std::move(next));
    if (members_of(worker) > 0 && wfbp_) return wait_for_bucket_sums(worker, std::move(next));
    if (members_of(worker) > 0) return sum_host_gradients(worker, std::move(next));
    if (!compressing()) return push_rest_and_wait(worker, std::move(next));
    compress(worker, [this, worker, next] {
      push_and_receive(
          worker, sparse_, [this](int64_t s) { sparse_arrived(s); }, next);
    });
  }

 private:
  struct Rounds {
    std::vector<const Piece*> pieces;  // this shard's pieces of a step, in order
    std::vector<int64_t> arrived;      // workers' copies of each
    size_t next = 0;                   // the round under way
  };

  struct Host {
    int64_t gradients = 0;  // members' gradients at the leader
    Next waiter;            // the leader waiting for them, or a member waiting for the parameters
    // Wait-free: per bucket, members' copies at the leader (not yet summed); the leader's buckets backward has
    // produced, and summed and pushed, this step; whether its aggregating thread is summing one.
    std::vector<int64_t> bucket_arrivals;
    size_t backward_done = 0, summed = 0;
    bool summing = false;
  };

  int64_t leader_of(int64_t worker) const {
    return c_.settings.local_aggregation == "host" ? worker - worker % c_.cluster.workers_per_node : worker;
  }
  int64_t members_of(int64_t leader) const {
    if (c_.settings.local_aggregation != "host") return 0;
    return std::min(c_.cluster.workers_per_node, c_.workers - leader) - 1;
  }
  Host& host(int64_t worker) { return hosts_[static_cast<size_t>(worker)]; }

  void exchange_with_leader(int64_t worker, Next next) {
    const double start = c_.queue.now();
    const int64_t leader = leader_of(worker);
    host(worker).waiter = [this, worker, start, next] {
      c_.span(worker, wfbp_ ? "wait for the host's parameters" : "push to the host's leader, wait for parameters",
              start);
      next();
    };
    if (wfbp_) return;  // the buckets went during backward
    c_.send_between_workers(worker, leader, c_.model_bytes(), [this, leader] {
      ++host(leader).gradients;
      if (host(leader).waiter && host(leader).gradients == members_of(leader)) {
        Next waiter = std::move(host(leader).waiter);
        host(leader).waiter = nullptr;
        waiter();
      }
    });
  }

  void sum_host_gradients(int64_t leader, Next next) {
    const double start = c_.queue.now();
    Next sum = [this, leader, start, next] {
      c_.span(leader, "wait for the host's gradients", start);
      host(leader).gradients = 0;
      const double members = static_cast<double>(members_of(leader));
      c_.run(leader, "sum the host's gradients", members * c_.model_bytes() * c_.cluster.gamma_seconds_per_byte,
             [this, leader, next] {
               push_rest_and_wait(leader, [this, leader, next] { hand_parameters_to_members(leader, next); });
             });
    };
    if (host(leader).gradients == members_of(leader)) return sum();
    host(leader).waiter = std::move(sum);
  }

  // The leader's aggregating thread: the next bucket once backward has produced it and every member's copy is in.
  void sum_next_bucket(int64_t leader) {
    Host& h = host(leader);
    h.bucket_arrivals.resize(buckets_.size(), 0);
    const size_t b = h.summed;
    if (h.summing || b >= h.backward_done || h.bucket_arrivals[b] < members_of(leader)) return;
    h.summing = true;
    h.bucket_arrivals[b] -= members_of(leader);
    const double start = c_.queue.now();
    const double members = static_cast<double>(members_of(leader));
    c_.queue.after(members * buckets_.bytes[b] * c_.cluster.gamma_seconds_per_byte, [this, leader, b, start] {
      c_.span(leader, "sum the host's bucket", start, Timeline::kCommunication);
      uplink_.push_bucket(leader, b);
      Host& h = host(leader);
      h.summing = false;
      ++h.summed;
      if (h.summed == buckets_.size() && h.waiter) {
        Next waiter = std::move(h.waiter);
        h.waiter = nullptr;
        return waiter();
      }
      sum_next_bucket(leader);
    });
  }

  void wait_for_bucket_sums(int64_t leader, Next next) {
    const double start = c_.queue.now();
    Next done = [this, leader, start, next] {
      c_.span(leader, "wait for the host's buckets", start);
      push_rest_and_wait(leader, [this, leader, next] { hand_parameters_to_members(leader, next); });
    };
    if (host(leader).summed == buckets_.size()) return done();
    host(leader).waiter = std::move(done);
  }

  void hand_parameters_to_members(int64_t leader, Next next) {
    const double start = c_.queue.now();
    auto left = std::make_shared<int64_t>(members_of(leader));
    for (int64_t member = leader + 1; member <= leader + members_of(leader); ++member) {
      c_.send_between_workers(leader, member, c_.model_bytes(), [this, leader, member, start, left, next] {
        Next waiter = std::move(host(member).waiter);
        host(member).waiter = nullptr;
        waiter();
        if (--*left == 0) {
          c_.span(leader, "send parameters to the host", start);
          next();
        }
      });
    }
  }

  void at_server(int64_t, const Piece& piece, int64_t, int64_t) override {
    Rounds& r = rounds_[static_cast<size_t>(piece.shard)];
    ++r.arrived[static_cast<size_t>(piece.index)];
    // One round at a time: a worker's handler takes its next piece only once the round of the last is over.
    while (r.arrived[r.next] == static_cast<int64_t>(pushers_.size())) {
      r.arrived[r.next] = 0;
      const Piece& round = *r.pieces[r.next];
      r.next = (r.next + 1) % r.pieces.size();
      c_.run_on_server(round.shard, "update", aggregate_and_update(round.bytes), [this, &round] {
        if (round.last) ++version_of(round.shard);
        for (const int64_t w : pushers_) uplink_.reply(round, w, version_of(round.shard));
      });
    }
  }

  void sparse_arrived(int64_t s) {
    if (++sparse_arrived_[static_cast<size_t>(s)] < c_.workers) return;
    sparse_arrived_[static_cast<size_t>(s)] = 0;
    c_.run_on_server(s, "update", aggregate_and_update(shard_bytes(s)), [this, s] {
      ++version_of(s);
      for (int64_t w = 0; w < c_.workers; ++w) requests_.reply(s, w, version_of(s));
    });
  }

  double aggregate_and_update(double bytes) const {
    return static_cast<double>(pushers_.size()) * bytes * c_.cluster.gamma_seconds_per_byte +
           c_.server_update_seconds(bytes);
  }

  std::vector<Rounds> rounds_;
  std::vector<int64_t> pushers_;  // the workers that push: every one, or each node's leader
  std::vector<Host> hosts_;       // per worker (local aggregation)
  std::vector<int64_t> sparse_arrived_ = std::vector<int64_t>(static_cast<size_t>(c_.servers), 0);
};

// ASP: each piece applied at once, alone, and answered to its sender.
class Asp final : public PsWorkload {
 public:
  explicit Asp(DesContext& c) : PsWorkload(c, /*replies=*/true, /*wfbp_allowed=*/true) {}

  void before_backward(int64_t worker, int64_t, Next next) override { start_dense_pushes(worker, std::move(next)); }

  void after_backward(int64_t worker, int64_t, Next next) override {
    if (!compressing()) return push_rest_and_wait(worker, std::move(next));
    compress(worker, [this, worker, next] {
      const int64_t version = requests_.version(worker);
      push_and_receive(
          worker, sparse_,
          [this, worker, version](int64_t s) {
            c_.run_on_server(s, "update", c_.server_update_seconds(shard_bytes(s)), [this, worker, version, s] {
              record_staleness(worker, version_of(s) - version);
              requests_.reply(s, worker, ++version_of(s));
            });
          },
          next);
    });
  }

 private:
  void at_server(int64_t worker, const Piece& piece, int64_t version, int64_t) override {
    c_.run_on_server(piece.shard, "update", c_.server_update_seconds(piece.bytes), [this, worker, version, &piece] {
      if (piece.last) {  // the worker's whole gradient is in: one update of the shard
        record_staleness(worker, version_of(piece.shard) - version);
        ++version_of(piece.shard);
      }
      uplink_.reply(piece, worker, version_of(piece.shard));
    });
  }
};

// SSP: gradients pushed without waiting (a ring of send buffers), the same step locally, and a blocking pull every s +
// 1 iterations or whenever the slowest clock the last pull reported is more than s behind; a shard holds a pull from
// clock c until its slowest worker's clock is at least c - s. Records the clock gap each iteration starts at (never
// above s).
class Ssp final : public PsWorkload {
 public:
  explicit Ssp(DesContext& c)
      : PsWorkload(c, /*replies=*/false, /*wfbp_allowed=*/true),
        clock_(static_cast<size_t>(c.workers), 0),
        slowest_(static_cast<size_t>(c.workers), 0),
        pull_slowest_(static_cast<size_t>(c.workers), kNone),
        sparse_in_flight_(static_cast<size_t>(c.workers), 0),
        sparse_waiter_(static_cast<size_t>(c.workers)),
        shard_clocks_(static_cast<size_t>(c.servers), Clocks(c.workers, c.settings.warmup + c.settings.iterations)),
        held_(static_cast<size_t>(c.servers)) {}

  void before_backward(int64_t worker, int64_t, Next next) override { start_dense_pushes(worker, std::move(next)); }

  void after_backward(int64_t worker, int64_t step, Next next) override {
    Next update = [this, worker, next] {
      c_.run(worker, "update", c_.update_seconds(worker, c_.model_bytes()),
             [this, worker, next] { advance(worker, next); });
    };
    if (!compressing()) {
      uplink_.push_rest(worker);
      return update();
    }
    compress(worker, [this, worker, step, update] { push_sparse(worker, step, update); });
  }

  void worker_finished(int64_t worker) override {
    // SspWorker::end_training: kRetire, so that the worker never holds the others' pulls.
    requests_.send_to_all(worker, std::vector<double>(static_cast<size_t>(c_.servers), 0.0), [this, worker](int64_t s) {
      c_.run_on_server(s, nullptr, 0, [this, worker, s] {
        shard_clocks_[static_cast<size_t>(s)].set(worker, Clocks::kRetired);
        release_held(s);
        c_.handled(worker, s);
      });
    });
  }

 private:
  static constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  static constexpr int64_t kSparseInFlight = 4;  // PushOptions::send_buffers

  // Each shard's clocks of every worker; the minimum only grows, so a count per clock value finds it quickly.
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

  // After the local step: the clock advances; pull when it is time, or when too far ahead of the slowest.
  void advance(int64_t worker, Next next) {
    const auto w = static_cast<size_t>(worker);
    const int64_t clock = ++clock_[w];
    const bool periodic = clock % (c_.settings.staleness + 1) == 0;
    if (!periodic && clock - slowest_[w] <= c_.settings.staleness) return record_gap(worker, next);
    pull_slowest_[w] = kNone;
    push_and_receive(
        worker, std::vector<double>(static_cast<size_t>(c_.servers), 0.0),
        [this, worker, clock](int64_t s) {
          held_[static_cast<size_t>(s)].push_back({worker, clock, c_.queue.now()});
          release_held(s);
        },
        [this, worker, next] {
          uplink_.set_version(worker, requests_.version(worker));
          if (pull_slowest_[static_cast<size_t>(worker)] != kNone) {
            slowest_[static_cast<size_t>(worker)] = pull_slowest_[static_cast<size_t>(worker)];
          }
          record_gap(worker, next);
        });
  }

  // SspWorker's max_gap_: the clock gap the next iteration computes at.
  void record_gap(int64_t worker, Next next) {
    const auto w = static_cast<size_t>(worker);
    if (c_.measuring(worker)) ++c_.clock_gap[clock_[w] - slowest_[w]];
    next();
  }

  // PsWorker::push of a compressed gradient without waiting for it: at most 4 in flight.
  void push_sparse(int64_t worker, int64_t step, Next next) {
    const auto w = static_cast<size_t>(worker);
    const double start = c_.queue.now();
    Next send = [this, worker, w, step, start, next] {
      ++sparse_in_flight_[w];
      const int64_t version = requests_.version(worker);
      requests_.send_to_all(
          worker, sparse_,
          [this, worker, version, step](int64_t s) { apply(s, worker, version, step, shard_bytes(s)); },
          [this, w] {
            --sparse_in_flight_[w];
            if (Next waiter = std::move(sparse_waiter_[w])) {
              sparse_waiter_[w] = nullptr;
              waiter();
            }
          });
      c_.span(worker, "push", start);
      next();
    };
    if (sparse_in_flight_[w] < kSparseInFlight) return send();
    sparse_waiter_[w] = send;
  }

  void at_server(int64_t worker, const Piece& piece, int64_t version, int64_t step) override {
    const int64_t shard = piece.shard;
    const bool complete = piece.last;
    c_.run_on_server(shard, "update", c_.server_update_seconds(piece.bytes),
                     [this, shard, complete, worker, version, step] {
                       if (complete) finish_gradient(shard, worker, version, step);
                       c_.handled(worker, shard);
                     });
  }

  void apply(int64_t s, int64_t worker, int64_t version, int64_t step, double bytes) {
    c_.run_on_server(s, "update", c_.server_update_seconds(bytes), [this, s, worker, version, step] {
      finish_gradient(s, worker, version, step);
      c_.handled(worker, s);
    });
  }

  // SspServer::apply once a worker's gradient of clock `step` is complete at the shard.
  void finish_gradient(int64_t s, int64_t worker, int64_t version, int64_t step) {
    record_staleness(worker, version_of(s) - version);
    ++version_of(s);
    shard_clocks_[static_cast<size_t>(s)].set(worker, step + 1);
    release_held(s);
  }

  // SspServer::serve_pull: a pull from clock c is answered once the slowest clock is at least c - s.
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
      if (slowest != Clocks::kRetired) {
        auto& reported = pull_slowest_[static_cast<size_t>(pull.worker)];
        reported = std::min(reported, slowest);
      }
      c_.trace.span(c_.server_rank(s), "hold pull", pull.since, c_.queue.now());
      requests_.reply(s, pull.worker, version_of(s));
    }
  }

  std::vector<int64_t> clock_;         // per worker: iterations pushed
  std::vector<int64_t> slowest_;       // per worker: the slowest clock its last pull reported
  std::vector<int64_t> pull_slowest_;  // per worker: the smallest slowest clock of the pull under way
  std::vector<int64_t> sparse_in_flight_;
  std::vector<Next> sparse_waiter_;
  std::vector<Clocks> shard_clocks_;
  std::vector<std::vector<HeldPull>> held_;  // per shard
};

// EASGD: a local step every iteration; every tau iterations a round trip of the parameters with every shard, which
// applies the elastic update under its lock.
class Easgd final : public PsWorkload {
 public:
  explicit Easgd(DesContext& c)
      : PsWorkload(c, /*replies=*/true, /*wfbp_allowed=*/false), clock_(static_cast<size_t>(c.workers), 0) {}

  void after_backward(int64_t worker, int64_t, Next next) override {
    c_.run(worker, "update", c_.update_seconds(worker, c_.model_bytes()), [this, worker, next] {
      if (++clock_[static_cast<size_t>(worker)] % c_.settings.tau != 0) return next();
      push_and_receive(
          worker, requests_.shard_bytes(),
          [this, worker](int64_t s) {
            c_.run_on_server(s, "elastic update", c_.server_update_seconds(shard_bytes(s)),
                             [this, worker, s] { requests_.reply(s, worker, ++version_of(s)); });
          },
          next);
    });
  }

 private:
  std::vector<int64_t> clock_;
};

// ALADDIN: the worker steps locally, pushes its gradient without waiting (a ring of send buffers: it waits only when
// the servers are a whole ring behind) and mixes in every server model that has arrived. A shard accumulates each
// gradient (gamma per byte); when worker i's count reaches pi it updates (lazily: the averaged gradient) and pushes its
// model to i alone. Variants: l1 never pushes; l2 updates with every gradient.
class Aladdin final : public PsWorkload {
 public:
  explicit Aladdin(DesContext& c)
      : PsWorkload(c, /*replies=*/false, /*wfbp_allowed=*/false),
        arrived_(static_cast<size_t>(c.workers)),
        since_push_(static_cast<size_t>(c.servers), std::vector<int64_t>(static_cast<size_t>(c.workers), 0)) {}

  void before_backward(int64_t worker, int64_t, Next next) override { uplink_.start(worker, std::move(next)); }

  void after_backward(int64_t worker, int64_t, Next next) override {
    c_.run(worker, "update", c_.update_seconds(worker, c_.model_bytes()), [this, worker, next] {
      uplink_.push_rest(worker);
      mix(worker, next);
    });
  }

 private:
  // x_i <- (1 - alpha) x_i + alpha x~ for each arrived shard model: a pass over the slice (no span, as the real code's
  // mix_arrived_models).
  void mix(int64_t worker, Next next) {
    const Arrived arrived = std::exchange(arrived_[static_cast<size_t>(worker)], Arrived{});
    if (arrived.bytes == 0) return next();
    if (arrived.version >= 0) uplink_.set_version(worker, arrived.version);  // shard 0's model mixed in (aladdin.cpp)
    c_.run(worker, nullptr, c_.update_seconds(worker, arrived.bytes), std::move(next));
  }

  void at_server(int64_t worker, const Piece& piece, int64_t version, int64_t) override {
    const int64_t s = piece.shard;
    const auto& variant = c_.settings.aladdin_variant;
    int64_t& since = since_push_[static_cast<size_t>(s)][static_cast<size_t>(worker)];
    const bool triggered = ++since >= c_.settings.pi;
    if (triggered) since = 0;
    const bool updates = variant == "l2" || triggered;
    const double bytes = shard_bytes(s);
    const double seconds = (variant == "l2" ? 0.0 : bytes * c_.cluster.gamma_seconds_per_byte) +
                           (updates ? c_.server_update_seconds(bytes) : 0.0);
    c_.run_on_server(s, "accumulate", seconds, [this, s, worker, version, updates, triggered, bytes] {
      record_staleness(worker, version_of(s) - version);
      if (updates) ++version_of(s);
      // The handler sends the model and waits for the send before it takes the worker's next gradient.
      if (!triggered || c_.settings.aladdin_variant == "l1") return c_.handled(worker, s);
      c_.send_to_worker(s, worker, bytes, [this, s, worker, bytes, version = version_of(s)] {
        Arrived& arrived = arrived_[static_cast<size_t>(worker)];
        arrived.bytes += bytes;
        if (s == 0) arrived.version = version;
        c_.handled(worker, s);
      });
    });
  }

  // The shard models that reached a worker since its last mix.
  struct Arrived {
    double bytes = 0;
    int64_t version = -1;  // of shard 0's model among them (-1: none)
  };
  std::vector<Arrived> arrived_;                  // per worker
  std::vector<std::vector<int64_t>> since_push_;  // per shard, per worker: gradients since its last push
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
