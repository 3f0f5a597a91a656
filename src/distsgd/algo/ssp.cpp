// SSP (spec: "SSP", the IPDPS implementation): every iteration the worker sends its gradient to the PS, which
// applies it at once as ASP does, and applies it to its own parameters too; every s+1 iterations it pulls x~.
// The PS keeps every worker's clock and holds a pull from a worker at clock c until the slowest worker's clock
// is at least c - s (Ho et al. 2013), so the bound is enforced at the server.
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/algo/ps/momentum_placement.hpp"
#include "distsgd/algo/ps/ps_worker.hpp"
#include "distsgd/algo/ps/shard_server.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/timed_phase.hpp"
#include "distsgd/core/timeline.hpp"
#include "distsgd/optim/flat_parameters.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <condition_variable>
#include <limits>

namespace distsgd::algo {
namespace {

constexpr bool kMomentumOnWorkerByDefault = false;  // the PS applies gradients as in ASP

const StoredOption<int64_t> kStaleness{"--staleness", 10, "SSP: staleness bound s (pull every s+1 iterations)",
                                       non_negative<int64_t>()};

class SspWorker final : public ps::PsWorker {
 public:
  explicit SspWorker(const WorkerSetup& s)
      : PsWorker(s),
        on_worker_(ps::momentum_on_worker(s.config, kMomentumOnWorkerByDefault)),
        local_(ps::worker_optimizer(s.config, s.flat.numel(), on_worker_)) {}

  void after_backward(int64_t step, double lr) override {
    auto& flat = setup_.flat;
    const ps::Request request{ps::RequestKind::kPushGradient, step, lr, clock_, version_};
    if (compressing()) {
      // The worker applies what it sent, as the PS will: the unsent residual is applied once, when it is sent.
      const auto sparse = compress_gradient(step);
      push(request, sparse);
      apply_locally([&] { flat.params().index_add_(0, sparse.indices, sparse.values, -lr); });
    } else {
      at::Tensor direction = on_worker_ ? local_.direction(flat.params(), flat.grads()) : flat.grads();
      push(request, direction);
      apply_locally([&] { flat.params().add_(direction, -lr); });
    }
    ++clock_;
    if (clock_ % (kStaleness.of(setup_.config) + 1) == 0) {
      push_and_receive({ps::RequestKind::kPull, step, lr, clock_, version_}, at::Tensor(), flat.params());
    }
  }

  // Workers stopping on their own (--time-budget) must not leave faster workers' pulls held behind their clock.
  void end_training() override { push({ps::RequestKind::kRetire, 0, 0, clock_, version_}, at::Tensor()); }

 private:
  template <typename Update>
  void apply_locally(const Update& update) {
    TimedPhase phase(setup_.timeline, "update", update_time_);
    at::NoGradGuard no_grad;
    update();
  }

  bool on_worker_;
  optim::MomentumSgd local_;
  int64_t clock_ = 0;
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
            apply(request, channel.receive_gradient(request), channel.worker());
          } else if (request.kind == ps::RequestKind::kPull) {
            serve_pull(request, channel);
          } else if (request.kind == ps::RequestKind::kRetire) {
            retire(channel.worker());
          } else {
            throw Error("SSP server got an unexpected request");
          }
        },
        [this](ps::WorkerChannel& channel) { retire(channel.worker()); });
    server_.extra()["ssp_pulls"] = pulls_;
    server_.extra()["ssp_max_pull_gap"] = max_gap_;                     // c - min clock at release: never above s
    server_.extra()["ssp_min_version_surplus"] = min_version_surplus_;  // version - n*c at release: never below 0
    return server_.statistics();
  }

 private:
  void apply(const ps::Request& request, at::Tensor& gradient, int64_t worker) {
    std::lock_guard<std::mutex> lock(server_.mutex());
    Timeline::Scope span(timeline_, "update");
    server_.record_staleness(server_.version() - request.version);
    optimizer_.step(server_.parameters(), gradient, request.lr, 0);
    server_.count_update();
    clocks_[worker] = request.clock + 1;
    clock_advanced_.notify_all();
  }

  void serve_pull(const ps::Request& request, ps::WorkerChannel& channel) {
    ps::Reply reply;
    {
      std::unique_lock<std::mutex> lock(server_.mutex());
      Timeline::Scope span(timeline_, "hold pull");
      clock_advanced_.wait(lock, [&] { return min_clock() >= request.clock - staleness_; });
      const int64_t slowest = min_clock();
      if (slowest != std::numeric_limits<int64_t>::max()) {
        max_gap_ = std::max(max_gap_, request.clock - slowest);
        // Every gradient of clocks below c - s is in x~ (each worker pushed at least c - s of them).
        min_version_surplus_ =
            std::min(min_version_surplus_, server_.version() - server_.workers() * (request.clock - staleness_));
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
  std::condition_variable clock_advanced_;
  int64_t pulls_ = 0, max_gap_ = std::numeric_limits<int64_t>::min();
  int64_t min_version_surplus_ = std::numeric_limits<int64_t>::max();
};

}  // namespace

AlgorithmInfo ssp_algorithm() {
  AlgorithmInfo info;
  info.name = "ssp";
  info.description = "stale synchronous parallel on the parameter server (--staleness s)";
  info.needs_servers = true;
  info.independent_workers = true;
  info.options = {&kStaleness.spec(), &ps::kSharding.spec(), &ps::kMomentumAt.spec()};
  for (const auto* o : compression::compression_options()) info.options.push_back(o);
  info.validate = [](const TrainConfig& c) {
    ps::check_momentum_placement(c, "ssp", {ps::MomentumAt::kWorker, ps::MomentumAt::kServer});
    compression::check_compression(c);
  };
  info.make_worker = [](const WorkerSetup& s) { return std::make_unique<SspWorker>(s); };
  info.make_server = [](const ServerSetup& s) { return std::make_unique<SspServer>(s); };
  return info;
}

}  // namespace distsgd::algo
