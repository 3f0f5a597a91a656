// SSP (spec: "SSP", the IPDPS implementation): every iteration the worker sends its gradient to the PS, which
// applies it at once as ASP does, and applies it to its own parameters too; every s+1 iterations it pulls x~.
// The bound is exact (Ho et al. 2013: the fastest worker is at most s clocks ahead of the slowest): a shard's
// replies carry the slowest worker's clock, and a worker whose clock minus the slowest it knows of exceeds s pulls
// at once; the shard holds a pull from a worker at clock c until the slowest clock is at least c - s. The slowest
// clock a worker knows of is never above the true one (clocks only grow), so the gap it records at every
// iteration bounds the true gap, and each shard checks the bound again on every gradient it applies.
// Pushes are unanswered and never waited for (ps/gradient_push.hpp: a ring of send buffers), so the worker applies
// its gradient while the push is in flight; under --overlap wfbp (default) the pieces go during backward.
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/algo/allreduce/allreduce_options.hpp"
#include "distsgd/algo/ps/momentum_placement.hpp"
#include "distsgd/algo/ps/ps_worker.hpp"
#include "distsgd/algo/ps/shard_server.hpp"
#include "distsgd/catalog/algorithm_options.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/runtime.hpp"
#include "distsgd/core/timed_phase.hpp"
#include "distsgd/core/timeline.hpp"
#include "distsgd/optim/flat_parameters.hpp"
#include "distsgd/optim/float_buffer.hpp"
#include "distsgd/optim/kernels.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/tensor.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>

namespace distsgd::algo {
namespace {

constexpr bool kMomentumOnWorkerByDefault = false;  // the PS applies gradients as in ASP

const StoredOption<int64_t> kStaleness = catalog::options::stored_option(catalog::options::kStaleness);

class SspWorker final : public ps::PsWorker {
 public:
  at::Tensor optimizer_state() override { return local_.momentum_buffer(); }
  explicit SspWorker(const WorkerSetup& s)
      : PsWorker(s),
        staleness_(kStaleness.of(s.config)),
        on_worker_(ps::momentum_on_worker(s.config, kMomentumOnWorkerByDefault)),
        local_(ps::worker_optimizer(s.config, s.flat.numel(), on_worker_)) {
    if (compressing()) return;
    enable_push({ps::wait_free_backprop(s.config), false}, [this](int64_t offset, int64_t numel) {
      auto& flat = setup_.flat;
      auto grads = flat.grads().narrow(0, offset, numel);
      return on_worker_ ? local_.direction(flat.params().narrow(0, offset, numel), grads, offset) : grads;
    });
  }

  ps::Request gradient_request(int64_t step, double lr) const override {
    return {ps::RequestKind::kPushGradient, step, lr, clock_, version_};
  }

  void after_backward(int64_t step, double lr) override {
    auto& flat = setup_.flat;
    if (compressing()) {
      // The worker applies what it sent, as the PS will: the unsent residual is applied once, when it is sent.
      const auto sparse = compress_gradient(step);
      push(gradient_request(step, lr), sparse, /*wait_until_sent=*/false);
      apply_locally([&] { flat.params().index_add_(0, sparse.indices, sparse.values, -lr); });
    } else {
      gradient_push().push_rest();
      // Every element's direction has been computed by now: the momentum buffer, or the gradient itself.
      const bool velocity = on_worker_ && local_.momentum() != 0;
      apply_locally([&] {
        const auto& direction = velocity ? local_.momentum_buffer() : flat.grads();
        optim::kernels::add_scaled(optim::floats(flat.params()), optim::floats(direction), optim::length(direction),
                                   -lr);
      });
    }
    ++clock_;
    const bool periodic = clock_ % (staleness_ + 1) == 0;
    const bool too_far_ahead = clock_ - slowest_ > staleness_;
    if (periodic || too_far_ahead) {
      if (!periodic) ++bound_pulls_;
      const auto replies =
          push_and_receive({ps::RequestKind::kPull, step, lr, clock_, version_}, at::Tensor(), flat.params());
      // A worker's iteration is complete once every shard has applied it: the slowest is the smallest of the
      // shards' slowest (each held the pull until its own was at least clock_ - s).
      int64_t slowest = std::numeric_limits<int64_t>::max();
      for (const auto& reply : replies) {
        if (reply.slowest >= 0) slowest = std::min(slowest, reply.slowest);
      }
      if (slowest != std::numeric_limits<int64_t>::max()) slowest_ = slowest;
    }
    // The next iteration computes at this gap (the slowest clock known here is never above the true one).
    max_gap_ = std::max(max_gap_, clock_ - slowest_);
  }

  void save_state(AlgorithmState& state) override {
    PsWorker::save_state(state);
    state.put_integer("ssp_clock", clock_);
    state.put_integer("ssp_slowest", slowest_);
  }
  void load_state(const AlgorithmState& state) override {
    PsWorker::load_state(state);
    clock_ = state.integer("ssp_clock");
    slowest_ = state.integer("ssp_slowest");
  }

  // Workers stopping on their own (--time-budget) must not leave faster workers' pulls held behind their clock.
  void end_training() override { push({ps::RequestKind::kRetire, 0, 0, clock_, version_}, at::Tensor()); }

  AlgorithmStats stats() const override {
    auto s = PsWorker::stats();
    s.per_worker_values = {{"ssp_max_clock_gap", static_cast<double>(max_gap_)},
                           {"ssp_bound_pulls", static_cast<double>(bound_pulls_)}};
    return s;
  }

 private:
  template <typename Update>
  void apply_locally(const Update& update) {
    TimedPhase phase(setup_.timeline, "update", update_time_);
    at::NoGradGuard no_grad;
    update();
  }

  int64_t staleness_;
  bool on_worker_;
  optim::MomentumSgd local_;
  int64_t clock_ = 0;
  int64_t slowest_ = 0;      // the slowest worker's clock, as the last pull's replies told (a lower bound)
  int64_t max_gap_ = 0;      // largest clock_ - slowest_ any iteration started at
  int64_t bound_pulls_ = 0;  // pulls made because the worker was more than s clocks ahead
};

class SspServer final : public ServerAlgorithm {
 public:
  explicit SspServer(const ServerSetup& s)
      : staleness_(kStaleness.of(s.config)),
        server_(s),
        timeline_(s.timeline),
        optimizer_(ps::server_optimizer(s.config, server_.range().numel, kMomentumOnWorkerByDefault)),
        clocks_(static_cast<size_t>(s.comm.workers()), 0) {}

  nlohmann::json serve() override {
    server_.serve(
        [this](const ps::Request& request, ps::WorkerChannel& channel) {
          if (request.kind == ps::RequestKind::kPushGradient) {
            const at::Tensor gradient = channel.receive_gradient(request);
            apply(request, gradient, channel);
          } else if (request.kind == ps::RequestKind::kPull) {
            serve_pull(request, channel);
          } else if (request.kind == ps::RequestKind::kRetire) {
            retire(channel.worker());
          } else {
            throw Error("SSP server got an unexpected request");
          }
        },
        [this](ps::WorkerChannel& channel) { retire(channel.worker()); },
        [this](int64_t lost_worker) { retire(lost_worker); });
    server_.extra()["ssp_pulls"] = pulls_;
    // Without a pull, the pull figures have no value (null rather than the sentinels they start from).
    const auto if_pulled = [this](int64_t value) { return pulls_ > 0 ? nlohmann::json(value) : nlohmann::json(); };
    server_.extra()["ssp_max_pull_gap"] = if_pulled(max_gap_);  // c - min clock at release: never above s
    server_.extra()["ssp_max_push_gap"] = max_push_gap_;        // clock of a gradient - min: never above s
    server_.extra()["ssp_min_version_surplus"] = if_pulled(min_version_surplus_);  // version - n*c: never below 0
    return server_.statistics();
  }

  void save_state(AlgorithmState& state) override {
    std::lock_guard<std::mutex> lock(server_.mutex());
    server_.save_state(state, &optimizer_);
    state.put_integers("clocks", clocks_);
  }
  void load_state(const AlgorithmState& state) override {
    server_.load_state(state, &optimizer_);
    state.copy_integers_to("clocks", clocks_);
  }

 private:
  void apply(const ps::Request& request, const at::Tensor& gradient, ps::WorkerChannel& channel) {
    std::lock_guard<std::mutex> lock(server_.mutex());
    Timeline::Scope span(timeline_, "update");
    optimizer_.step(server_.parameters().narrow(0, request.offset, gradient.numel()), gradient, request.lr,
                    request.offset);
    if (!channel.gradient_complete()) return;
    // The worker computed this gradient at clock request.clock, which it began only with the slowest at least
    // request.clock - s.
    max_push_gap_ = std::max(max_push_gap_, request.clock - min_clock());
    server_.record_staleness(server_.version() - request.version);
    server_.count_update();
    clocks_[channel.worker()] = request.clock + 1;
    clock_advanced_.notify_all();
  }

  void serve_pull(const ps::Request& request, ps::WorkerChannel& channel) {
    ps::Reply reply;
    {
      std::unique_lock<std::mutex> lock(server_.mutex());
      Timeline::Scope span(timeline_, "hold pull");
      clock_advanced_.wait(
          lock, [&] { return min_clock() >= request.clock - staleness_; }, "the slowest worker's clock");
      const int64_t slowest = min_clock();
      if (slowest != std::numeric_limits<int64_t>::max()) {
        max_gap_ = std::max(max_gap_, request.clock - slowest);
        // Every gradient of clocks below c - s is in x~ (each worker pushed at least c - s of them).
        min_version_surplus_ =
            std::min(min_version_surplus_, server_.version() - server_.workers() * (request.clock - staleness_));
        reply.slowest = slowest;
      }
      ++pulls_;
      channel.reply_buffer().copy_(server_.parameters());
      reply.version = server_.version();
    }
    channel.reply(channel.reply_buffer(), reply);
  }

  // A worker that takes no more steps never holds the others back.
  void retire(int64_t worker) {
    std::lock_guard<std::mutex> lock(server_.mutex());
    clocks_[worker] = std::numeric_limits<int64_t>::max();
    clock_advanced_.notify_all();
  }

  int64_t min_clock() const { return *std::min_element(clocks_.begin(), clocks_.end()); }

  int64_t staleness_;
  ps::ShardServer server_;
  Timeline& timeline_;
  optim::MomentumSgd optimizer_;
  std::vector<int64_t> clocks_;  // iterations each worker has pushed
  runtime::Condition clock_advanced_;
  int64_t pulls_ = 0, max_gap_ = std::numeric_limits<int64_t>::min(), max_push_gap_ = 0;
  int64_t min_version_surplus_ = std::numeric_limits<int64_t>::max();
};

}  // namespace

AlgorithmInfo ssp_algorithm() {
  AlgorithmInfo info;
  info.name = "ssp";
  info.description = "stale synchronous parallel on the parameter server (--staleness s)";
  info.needs_servers = true;
  info.independent_workers = true;
  info.survives_worker_loss = true;
  info.options = {&kStaleness.spec(),          &ps::kSharding.spec(),        &ps::kMomentumAt.spec(),
                  &allreduce::kOverlap.spec(), &allreduce::kBucketMb.spec(), &allreduce::kFirstBucketMb.spec()};
  for (const auto* o : compression::compression_options()) info.options.push_back(o);
  info.validate = [](const TrainConfig& c) {
    ps::check_momentum_placement(c, "ssp", {ps::MomentumAt::kWorker, ps::MomentumAt::kServer});
    ps::check_overlap(c, "ssp");
    compression::refuse_powersgd(c, "ssp");
  };
  info.make_worker = [](const WorkerSetup& s) { return std::make_unique<SspWorker>(s); };
  info.make_server = [](const ServerSetup& s) { return std::make_unique<SspServer>(s); };
  return info;
}

}  // namespace distsgd::algo
