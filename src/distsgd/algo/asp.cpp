// ASP (spec: "ASP"; Hogwild/Downpour style): each worker sends its gradient, the shard applies it at once and
// alone with the full learning rate, and replies with its current slice of x~ to that worker only; the worker
// continues from x~. No barrier across workers, so a gradient is about n-1 updates stale.
// --overlap wfbp (default): the gradient goes in pieces during backward (ps/gradient_push.hpp); the shard applies
// each piece at once and answers with its new values of that piece. A gradient counts as one update (and its
// staleness is measured) when its last piece is applied.
#include "distsgd/algo/algorithm.hpp"
#include "distsgd/algo/allreduce/allreduce_options.hpp"
#include "distsgd/algo/ps/momentum_placement.hpp"
#include "distsgd/algo/ps/ps_worker.hpp"
#include "distsgd/algo/ps/shard_server.hpp"
#include "distsgd/comm/communicator.hpp"
#include "distsgd/core/error.hpp"
#include "distsgd/core/timeline.hpp"
#include "distsgd/optim/flat_parameters.hpp"

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

namespace distsgd::algo {
namespace {

constexpr bool kMomentumOnWorkerByDefault = false;  // momentum at the PS (spec)

class AspWorker final : public ps::PsWorker {
 public:
  at::Tensor optimizer_state() override { return local_.momentum_buffer(); }
  explicit AspWorker(const WorkerSetup& s)
      : PsWorker(s),
        on_worker_(ps::momentum_on_worker(s.config, kMomentumOnWorkerByDefault)),
        local_(ps::worker_optimizer(s.config, s.flat.numel(), on_worker_)) {
    if (compressing()) return;
    // Momentum on the worker: each range's direction, computed when its gradient is ready.
    enable_push({ps::wait_free_backprop(s.config), true}, [this](int64_t offset, int64_t numel) {
      auto& flat = setup_.flat;
      auto grads = flat.grads().narrow(0, offset, numel);
      return on_worker_ ? local_.direction(flat.params().narrow(0, offset, numel), grads, offset) : grads;
    });
  }

  void after_backward(int64_t step, double lr) override {
    if (compressing()) {
      push_and_receive({ps::RequestKind::kGradient, step, lr, step, version_}, compress_gradient(step),
                       setup_.flat.params());
      return;
    }
    gradient_push().push_rest();
    version_ = gradient_push().finish().version;
  }

 private:
  bool on_worker_;
  optim::MomentumSgd local_;
};

class AspServer final : public ServerAlgorithm {
 public:
  explicit AspServer(const ServerSetup& s)
      : server_(s),
        timeline_(s.timeline),
        optimizer_(ps::server_optimizer(s.config, server_.range().numel, kMomentumOnWorkerByDefault)) {}

  nlohmann::json serve() override {
    server_.serve([this](const ps::Request& request, ps::WorkerChannel& channel) {
      require(request.kind == ps::RequestKind::kGradient, "ASP server got an unexpected request");
      const at::Tensor gradient = channel.receive_gradient(request);
      const int64_t offset = request.offset, numel = gradient.numel();
      auto reply_values = channel.reply_buffer().narrow(0, offset, numel);
      ps::Reply reply;
      {
        std::lock_guard<std::mutex> lock(server_.mutex());
        Timeline::Scope span(timeline_, "update");
        auto parameters = server_.parameters().narrow(0, offset, numel);
        optimizer_.step(parameters, gradient, request.lr, offset);
        if (channel.gradient_complete()) {
          server_.record_staleness(server_.version() - request.version);
          server_.count_update();
        }
        reply_values.copy_(parameters);
        reply.version = server_.version();
      }
      channel.reply(reply_values, reply);
    });
    return server_.statistics();
  }

  void save_state(AlgorithmState& state) override {
    std::lock_guard<std::mutex> lock(server_.mutex());
    server_.save_state(state, &optimizer_);
  }
  void load_state(const AlgorithmState& state) override { server_.load_state(state, &optimizer_); }

 private:
  ps::ShardServer server_;
  Timeline& timeline_;
  optim::MomentumSgd optimizer_;
};

}  // namespace

AlgorithmInfo asp_algorithm() {
  AlgorithmInfo info;
  info.name = "asp";
  info.description = "asynchronous parallel on the parameter server: each gradient applied at once";
  info.needs_servers = true;
  info.independent_workers = true;
  info.survives_worker_loss = true;
  info.options = {&ps::kSharding.spec(), &ps::kMomentumAt.spec(), &allreduce::kOverlap.spec(),
                  &allreduce::kBucketMb.spec(), &allreduce::kFirstBucketMb.spec()};
  for (const auto* o : compression::compression_options()) info.options.push_back(o);
  info.validate = [](const TrainConfig& c) {
    ps::check_momentum_placement(c, "asp", {ps::MomentumAt::kWorker, ps::MomentumAt::kServer});
    ps::check_overlap(c, "asp");
    compression::refuse_powersgd(c, "asp");
  };
  info.make_worker = [](const WorkerSetup& s) { return std::make_unique<AspWorker>(s); };
  info.make_server = [](const ServerSetup& s) { return std::make_unique<AspServer>(s); };
  return info;
}

}  // namespace distsgd::algo
